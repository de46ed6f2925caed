"""`-m vllm:` in process, run from the command line in vLLM's own virtualenv with this checkout's rueval
(tests/models/vllm_runs.py, one engine for all the runs), equal to `hf:` on the same folder; and what
vLLM itself does that the serving path builds on (its prefix cache, scoring a token from a generation
request), checked on the session's server."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from agreement import LONG_PAIR, LONG_TEXT, TOLERANCE, disagreements, plan_requests, run_args, samples
from generation_cases import cut_problems, save_requests
from support import read_samples, require
from vllm_server import REPO, vllm_missing, vllm_python

from rueval.api import evaluate
from rueval.models.backends.hf import HFCausalLM
from rueval.models.backends.openai import OpenAICompletionsModel
from rueval.models.backends.token_ids import local_tokens
from rueval.models.base import Loglikelihood, TokenLogprobs

pytestmark = pytest.mark.slow

GREEDY = ("-t", "chegeka,multiq", "--shots", "1", "--limit", "3", "--gen_kwargs", "temperature=0,max_gen_toks=120")
SAMPLED = ("-t", "chegeka", "--limit", "3")
SHORT_TEXT = "Мама мыла раму. 🙂"


@pytest.fixture(scope="module")
def vllm_runs(chat_model, trained_gpt2, cut_cases, tie_cases, tmp_path_factory) -> Path:
    """`rueval run -m vllm:FOLDER` on the served folder: the choice tasks by log-likelihood and (in lm-eval's
        spelling, --model vllm) perplexity, greedy and sampled generation; OUT/<run>/; and the texts of the
        generation cases on that folder and on the trained model (OUT/<cases>.json); token log-probabilities and a
    long context's log-likelihood (OUT/scored.json). vLLM's threads are not
        bound to a core (the session's server holds the first)."""
    missing = vllm_missing()
    require(missing is None, missing or "")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "VLLM_CPU_KVCACHE_SPACE": "1"}
    importable = subprocess.run([str(vllm_python()), "-c", "import rueval.cli"], env=env, capture_output=True)
    require(importable.returncode == 0, f"needs rueval's dependencies in {vllm_python()}: pip install -e . there")
    out = tmp_path_factory.mktemp("vllm-runs")
    env |= {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "RUEVAL_CACHE_DIR": str(out / "cache")}
    model = f"vllm:{chat_model}"
    commands = [run_args(model, out / "loglik", "loglik")]
    lm_evals = run_args("MODEL", out / "ppl", "ppl")  # lm-eval's spelling: the same engine, started once
    at = lm_evals.index("-m")
    commands.append(
        [*lm_evals[:at], "--model", "vllm", "--model_args", f"pretrained={chat_model}", *lm_evals[at + 2 :]]
    )
    commands.append(["run", "-m", model, *GREEDY, "--log-samples", "-o", str(out / "greedy")])
    commands.append(["run", "-m", model, *SAMPLED, "--log-samples", "-o", str(out / "sampled")])
    for name, folder, cases in (("cut", chat_model, cut_cases), ("tie", trained_gpt2, tie_cases)):
        requests = save_requests(cases.requests, out / f"{name}-requests.json")
        commands.append({"model": f"vllm:{folder}", "requests": str(requests), "texts": str(out / f"{name}.json")})
    scored = {"texts": [SHORT_TEXT, LONG_TEXT], "pairs": [[LONG_PAIR.context, LONG_PAIR.continuation]]}
    (out / "scored-asked.json").write_text(json.dumps(scored), encoding="utf-8")
    commands.append({"model": model, "scored": str(out / "scored-asked.json"), "out": str(out / "scored.json")})
    (out / "commands.json").write_text(json.dumps(commands), encoding="utf-8")
    runner = [str(vllm_python()), str(Path(__file__).with_name("vllm_runs.py")), str(out / "commands.json")]
    done = subprocess.run(runner, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


@pytest.mark.parametrize("scoring", ["loglik", "ppl"])
def test_the_in_process_vllm_backend_equals_hf_from_the_cli(vllm_runs, hf_runs, scoring, chat_model):
    worst, flips = disagreements(samples(vllm_runs / scoring), hf_runs[scoring])
    assert worst <= TOLERANCE and flips == 0
    weights = HFCausalLM(str(chat_model)).identity.partition("@")[2]  # the folder's content hash, as hf: names it
    results = json.loads((vllm_runs / scoring / "results.json").read_text(encoding="utf-8"))
    assert results["model_identity"] == f"vllm:{chat_model}@{weights}"


def test_greedy_generation_in_process_equals_hf_greedy(vllm_runs, chat_model, cli, tmp_path):
    result = cli("run", "-m", f"hf:{chat_model}", *GREEDY, "--log-samples", "-o", tmp_path)
    assert result.exit_code == 0, result.output
    for task in ("chegeka", "multiq"):
        ours, theirs = (read_samples(run, task) for run in (vllm_runs / "greedy", tmp_path))
        assert [line["resps"] for line in ours] == [line["resps"] for line in theirs]
        assert all(line["resps"][0][0] for line in ours)


@pytest.mark.parametrize("name", ["cut", "tie"])
def test_in_process_vllm_cuts_at_stops_and_budgets_as_hf_and_differs_only_at_ties(vllm_runs, name, request):
    """Stops that occur, never occur, span tokens or begin in the prompt, the end-of-text token, budgets of
    1, 3 and 24 tokens: each text is its stop-free text cut at its first stop, and equals `hf:`'s except
    where the top two logits at the first divergent step are within 1e-4."""
    cases = request.getfixturevalue(f"{name}_cases")
    texts = json.loads((vllm_runs / f"{name}.json").read_text(encoding="utf-8"))
    assert cut_problems(cases.requests, texts) == []
    found = cases.agreement(texts)
    assert found.real == [], found.line()
    assert found.equal >= 0.9 * len(texts), found.line()


def test_in_process_vllm_samples_what_a_vllm_server_samples(vllm_runs, vllm_server, tmp_path):
    served = OpenAICompletionsModel(vllm_server.name, vllm_server.url)
    evaluate(served, ["chegeka"], limit=3, log_samples=True, out=tmp_path)
    ours, theirs = (read_samples(run, "chegeka") for run in (vllm_runs / "sampled", tmp_path))
    assert [line["resps"] for line in ours] == [line["resps"] for line in theirs]


def test_in_process_vllm_scores_past_its_window_leaving_room_for_the_token_it_generates(vllm_runs, chat_model):
    """vLLM refuses a prompt as long as its max_model_len even when it is asked for prompt logprobs only: a longer
    text keeps its first tokens, one fewer than hf: keeps (the rest hf:'s), a longer context its last ones."""
    from text_prompts import reference

    hf = HFCausalLM(str(chat_model))
    found = json.loads((vllm_runs / "scored.json").read_text(encoding="utf-8"))
    short, long = (r.logprobs for r in hf.token_logprobs([TokenLogprobs(SHORT_TEXT), TokenLogprobs(LONG_TEXT)]))
    assert len(long) == hf.max_length - 1 and len(found["texts"][1]) == len(long) - 1
    for ours, theirs in zip(found["texts"], (short, long[:-1]), strict=True):
        assert len(ours) == len(theirs) and max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) <= TOLERANCE
    ids, first = replace(local_tokens(hf.tokenizer, "the test"), window=hf.max_length - 1).pair(LONG_PAIR)
    logprob, n_tokens, _ = reference(hf.model, ids, first)
    assert found["pairs"] == [[pytest.approx(logprob, abs=TOLERANCE), n_tokens]]


# -- what vLLM does, which the serving path builds on -----------------------------------------------


def long_prompts(hf: HFCausalLM) -> list[list[int]]:
    """Token ids of 2-shot TERRa options: the demonstrations make them longer than one cache block (128 on CPU)."""
    return [hf.encode(r)[0] for r in plan_requests(hf, "terra", "loglik", k=2)[:16]]


def test_prompt_logprob_requests_skip_the_prefix_cache_and_generation_requests_read_it(vllm_server, chat_model):
    prompts = long_prompts(HFCausalLM(str(chat_model)))
    assert min(map(len, prompts)) > 128

    def counted(payload: dict) -> tuple[float, float]:
        before = [vllm_server.metric(f"vllm:prefix_cache_{name}_total") for name in ("queries", "hits")]
        vllm_server.post("/v1/completions", {"prompt": prompts, "temperature": 0, **payload})
        after = [vllm_server.metric(f"vllm:prefix_cache_{name}_total") for name in ("queries", "hits")]
        return after[0] - before[0], after[1] - before[1]

    scored = {"max_tokens": 0, "echo": True, "logprobs": 1}
    assert counted(scored) == counted(scored) == (0, 0)  # not even looked up
    queries, hits = counted({"max_tokens": 1})
    assert queries == sum(map(len, prompts)) and hits >= 128 * len(prompts)


def test_a_single_token_continuation_is_scored_exactly_from_a_generation_request(vllm_server, chat_model):
    """max_tokens=1 on the context alone with logprob_token_ids: the continuation's logprob, whatever its rank."""
    hf = HFCausalLM(str(chat_model))
    contexts = {r.context for r in plan_requests(hf, "terra", "loglik", k=0)[:10]}
    single = [Loglikelihood(c, " Д") for c in sorted(contexts)]
    single = [r for r in single if len(hf.encode(r)[0]) - hf.encode(r)[1] == 1]
    assert single
    for request, reference in zip(single, hf.loglikelihood(single), strict=True):
        ids, first = hf.encode(request)
        payload = {"prompt": ids[:first], "max_tokens": 1, "temperature": 0, "logprobs": 1}
        payload |= {"logprob_token_ids": [ids[first]], "return_tokens_as_token_ids": True}
        top = vllm_server.post("/v1/completions", payload)["choices"][0]["logprobs"]["top_logprobs"][0]
        assert top[f"token_id:{ids[first]}"] == pytest.approx(reference.logprob, abs=1e-4)
