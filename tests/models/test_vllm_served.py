"""`openai:` and `openai-chat:` against a real vLLM server (the session's ``vllm_server``, tests/models/
vllm_server.py) serving the tiny GPT-2 that `hf:` loads from the same folder: by default prompts go as
token ids and equal `hf:` to 0.01 nats on the choice tasks' request shapes (0-shot, few-shot, empty
contexts), from the command line; text prompts follow the character-boundary rule; generation, chat
completions with the model's template, the served identity and two servers against one."""

from __future__ import annotations

import json

import httpx
import pytest
from agreement import (
    CHOICE_TASKS,
    TOLERANCE,
    disagreements,
    generation_requests,
    plan_requests,
    run_args,
    samples,
)
from generation_cases import cut_problems
from support import SYSTEM, read_samples
from text_prompts import PAIRS, text_reference
from transformers import AutoTokenizer
from vllm_server import VLLMServer

from rueval.core.errors import RuevalError
from rueval.models.backends.hf import HFCausalLM
from rueval.models.backends.openai import OpenAICompletionsModel
from rueval.models.backends.openai_chat import OpenAIChatModel
from rueval.models.backends.serving import ServerClient
from rueval.models.backends.token_ids import served_tokens
from rueval.models.base import Generation, Loglikelihood, Message

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("scoring", ["loglik", "ppl"])
def test_the_cli_openai_backend_equals_hf_by_default(cli, vllm_server, hf_runs, scoring, tmp_path):
    result = cli(*run_args(f"openai:{vllm_server.name}", tmp_path, scoring, "--base-url", vllm_server.url))
    assert result.exit_code == 0, result.output
    assert result.output.count("prompts go as token ids built as hf: builds them") == 1  # said once
    worst, flips = disagreements(samples(tmp_path), hf_runs[scoring])
    assert worst <= TOLERANCE and flips == 0
    identity = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["model_identity"]
    assert identity.endswith(f" tokenizer={vllm_server.model_dir}")  # the served folder's own, found through root


@pytest.mark.parametrize("form", ["spec key", "option", "lm-eval"])
def test_a_tokenizer_named_in_the_spec_or_by_option_or_in_lm_evals_form_equals_hf(
    cli, vllm_server, hf_runs, tiny_gpt2_dir, form, tmp_path
):
    name, url = vllm_server.name, vllm_server.url
    model = {
        "spec key": ["-m", f"openai:{name},tokenizer={tiny_gpt2_dir}", "--base-url", url],
        "option": ["-m", f"openai:{name}", "--tokenizer", str(tiny_gpt2_dir), "--base-url", url],
        "lm-eval": [
            "--model",
            "local-completions",
            "--model_args",
            f"model={name},base_url={url}/completions,tokenizer={tiny_gpt2_dir},num_concurrent=4",
        ],
    }[form]
    args = run_args("MODEL", tmp_path, "ppl")
    at = args.index("-m")
    result = cli(*args[:at], *model, *args[at + 2 :])
    assert result.exit_code == 0, result.output
    assert f"prompts go as token ids built as hf: builds them ({tiny_gpt2_dir})" in result.output
    worst, flips = disagreements(samples(tmp_path), hf_runs["ppl"])
    assert worst <= TOLERANCE and flips == 0


def test_text_prompts_follow_the_character_boundary_rule_and_say_they_may_differ(vllm_server, plain, capsys):
    """vLLM tokenizes text without GPT-2's start token: what rueval scores is then the plain model's
    log-likelihood of those tokens, continuation tokens told by their characters."""
    backend = OpenAICompletionsModel(vllm_server.name, vllm_server.url, tokenizer="text")
    results = backend.loglikelihood(PAIRS)
    assert "prompts go as text (tokenizer=text)" in capsys.readouterr().err
    for request, result in zip(PAIRS, results, strict=True):
        logprob, n_tokens, _ = text_reference(plain, request)
        assert (result.logprob, result.n_tokens) == (pytest.approx(logprob, abs=1e-4), n_tokens), request
    assert "tokenizer=" not in backend.identity  # text prompts keep a cache of their own


def test_tokenize_alone_builds_the_ids_hf_builds(vllm_server, chat_model):
    """Without the weights folder: the server's /tokenize, and its /tokenizer_info for GPT-2's start token."""
    client = ServerClient(vllm_server.name, None, 60.0, 0, 1.0)

    def request(path: str, payload: dict | None):
        return client.request(vllm_server.base, path, None if payload is None else {"model": "tiny-gpt2", **payload})

    tokens = served_tokens(request, {"max_model_len": 2048}, "openai:tiny-gpt2")
    hf = HFCausalLM(str(chat_model))
    assert (tokens.name, tokens.start_token) == ("server /tokenize", hf.start_token)
    requests = [r for name in CHOICE_TASKS for r in plan_requests(hf, name, "loglik", k=2)[:12]]
    requests += [Loglikelihood("", "Мама мыла раму. 🙂"), Loglikelihood("Ответ: ", "да")]
    assert [tokens.pair(r) for r in requests] == [hf.encode(r) for r in requests]


def test_the_served_identity_names_the_weights_folder_and_another_name_is_refused(vllm_server):
    identity = OpenAICompletionsModel(vllm_server.name, vllm_server.url).identity
    assert identity.startswith(f"openai:{vllm_server.name} ") and f"root={vllm_server.model_dir}" in identity
    assert "created=" not in identity  # vLLM's created is the time of the answer
    with pytest.raises(RuevalError, match="does not serve model 'nope'; it serves: tiny-gpt2"):
        OpenAICompletionsModel("nope", vllm_server.url).generate([Generation("Кошка", 2)])


def test_a_run_with_choice_and_generation_tasks_goes_end_to_end_from_the_cli(cli, vllm_server, tmp_path):
    out = tmp_path / "out"
    flags = ("-t", "parus,chegeka", "--limit", "3", "--base-url", vllm_server.url)
    result = cli("run", "-m", f"openai:{vllm_server.name}", *flags, "-o", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [summary["tasks"][t]["n"] for t in ("parus", "chegeka")] == [3, 3]
    assert summary["model_identity"].startswith(f"openai:{vllm_server.name} ")


def test_greedy_generation_equals_hf_greedy_and_stops_where_asked(vllm_server, chat_model):
    hf = HFCausalLM(str(chat_model))
    requests = [r for name in ("chegeka", "multiq") for r in generation_requests(hf, name, k=1)]
    served = OpenAICompletionsModel(vllm_server.name, vllm_server.url)
    texts = served.generate(requests)
    assert texts == hf.generate(requests) and all(texts)
    long = Generation("Кошка сидит на", 40)
    (full,) = hf.generate([long])
    short = served.generate([Generation(long.prompt, 4)])[0]
    assert len(short) < len(full) and full.startswith(short)
    stop = full[len(full) // 2 :][:3]  # a piece of the greedy text from its second half
    cut = served.generate([Generation(long.prompt, 40, stop=(stop, "\n\n"))])[0]
    assert cut == full[: full.index(stop)] and stop not in cut


def test_served_texts_cut_at_stops_and_budgets_as_hf(vllm_server, cut_cases):
    """generation_cases' stops and budgets (and a prompt over the served window): each text is its stop-free
    text cut at its first stop, and equals `hf:`'s except at ties."""
    texts = OpenAICompletionsModel(vllm_server.name, vllm_server.url).generate(cut_cases.requests)
    assert cut_problems(cut_cases.requests, texts) == []
    found = cut_cases.agreement(texts)
    assert found.real == [], found.line()


@pytest.fixture(scope="module")
def trained_server(trained_gpt2, tmp_path_factory):
    """A second server, on the briefly trained model, its threads on the other core."""
    log = tmp_path_factory.mktemp("trained-server") / "server.log"
    with VLLMServer(trained_gpt2, log, name="trained-gpt2", cores="1") as server:
        yield server


def test_served_greedy_texts_of_a_trained_model_equal_hf_except_at_ties(trained_server, tie_cases):
    texts = OpenAICompletionsModel(trained_server.name, trained_server.url).generate(tie_cases.requests)
    assert cut_problems(tie_cases.requests, texts) == []
    found = tie_cases.agreement(texts)
    assert found.real == [], found.line()
    assert tie_cases.ended_early() > 0  # texts that ended at the end-of-text token were among them


def test_sampled_generation_is_seeded_per_prompt_and_independent_of_batching(vllm_server):
    prompts = ["Кошка сидит на", "Вопрос: кто написал «Войну и мир»? Ответ:", "Мама мыла"]
    requests = [Generation(p, 24, top_p=0.8, seed=5) for p in prompts]

    def sampled(per_request: int, batch: list[Generation]) -> list[str]:
        return OpenAICompletionsModel(vllm_server.name, vllm_server.url, prompts_per_request=per_request).generate(
            batch
        )

    texts = sampled(8, requests)
    assert texts == sampled(1, requests) == sampled(8, requests[::-1])[::-1]
    assert texts != sampled(8, [Generation(r.prompt, 24, top_p=0.8, seed=6) for r in requests])


def test_two_servers_share_the_work_and_equal_one(cli, vllm_server, chat_model, hf_runs, tmp_path):
    """A second server on the other core: the run's requests split between the two, the numbers those of one."""
    out = tmp_path / "run"  # beside the server's log: a run directory holds only the run
    with VLLMServer(chat_model, tmp_path / "second.log", cores="1") as second:
        urls = f"{vllm_server.url},{second.url}"
        before = [s.metric("vllm:request_success_total") for s in (vllm_server, second)]
        result = cli(*run_args(f"openai:{vllm_server.name}", out, "loglik", "--base-url", urls))
        after = [s.metric("vllm:request_success_total") for s in (vllm_server, second)]
    assert result.exit_code == 0, result.output
    assert all(a - b >= 2 for a, b in zip(after, before, strict=True))  # each server answered requests
    worst, flips = disagreements(samples(out), hf_runs["loglik"])
    assert worst <= TOLERANCE and flips == 0
    # the servers' URLs are not part of the identity: a one-server run's cache serves the two
    identity = json.loads((out / "results.json").read_text(encoding="utf-8"))["model_identity"]
    assert identity == OpenAICompletionsModel(vllm_server.name, vllm_server.url).identity


# -- openai-chat: the model's chat template, rendered by vLLM -------------------------------------------


def chat_run(cli, out, model, *flags):
    result = cli("run", "-m", model, "-t", "parus,terra", "--limit", "4", "--shots", "1", "-o", out, *flags)
    assert result.exit_code == 0, result.output
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_chat_options_by_prompt_logprobs_equal_hf_with_the_chat_template(cli, vllm_server, chat_model, tmp_path):
    chat_flags = ("--system-instruction", SYSTEM, "--fewshot-as-multiturn", "--log-samples")
    served = chat_run(cli, tmp_path / "chat", "openai-chat:tiny-gpt2", "--base-url", vllm_server.url, *chat_flags)
    local = chat_run(cli, tmp_path / "hf", f"hf:{chat_model}", "--apply-chat-template", *chat_flags)
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    for task in ("parus", "terra"):
        assert served["tasks"][task]["protocol"] == "loglik-chat-logprobs"
        assert local["tasks"][task]["protocol"] == "loglik-chat-template"
        assert served["tasks"][task]["score"] == local["tasks"][task]["score"]
        for sent, rendered in zip(
            read_samples(tmp_path / "chat", task),
            read_samples(tmp_path / "hf", task),
            strict=True,
        ):
            assert sent["prediction"] == rendered["prediction"]
            for message_args, text_args in zip(sent["arguments"].values(), rendered["arguments"].values(), strict=True):
                messages = json.loads(message_args["arg_0"])  # the messages sent, as lm-eval logs them
                assert [m["role"] for m in messages][:2] == ["system", "user"]  # the demonstration as a user turn
                assert "assistant" in [m["role"] for m in messages]  # ... and its answer as an assistant turn
                # the server's rendering of the messages is the prompt hf: scores after (BOS aside)
                text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
                assert text == tokenizer.bos_token + text_args["arg_0"]
                assert message_args["arg_1"] == text_args["arg_1"]
            scores = [float(resp[0][0]) for resp in sent["resps"]]
            assert scores == pytest.approx([float(resp[0][0]) for resp in rendered["resps"]], abs=TOLERANCE)


def test_greedy_chat_answers_equal_hf_with_the_template(cli, vllm_server, chat_model, tmp_path):
    common = ("-t", "chegeka,multiq", "--limit", "4", "--shots", "0,1", "--log-samples", "--cache", "off")
    common += ("--gen_kwargs", "temperature=0")
    served = cli("run", "-m", "openai-chat:tiny-gpt2", "--base-url", vllm_server.url, *common, "-o", tmp_path / "chat")
    local = cli("run", "-m", f"hf:{chat_model}", "--apply-chat-template", *common, "-o", tmp_path / "hf")
    assert served.exit_code == 0 and local.exit_code == 0, served.output + local.output
    results = json.loads((tmp_path / "chat" / "results.json").read_text(encoding="utf-8"))
    assert results["tasks"]["multiq"]["protocol"] == "generate-chat"
    for task in ("chegeka", "multiq"):
        chat, hf = (read_samples(tmp_path / run, task) for run in ("chat", "hf"))
        assert [line["resps"] for line in chat] == [line["resps"] for line in hf]
        assert all(json.loads(line["arguments"]["gen_args_0"]["arg_0"])[-1]["role"] == "user" for line in chat)


def test_chat_options_can_be_scored_by_generating_instead(cli, vllm_server, tmp_path):
    flags = ("--base-url", vllm_server.url, "--chat-scoring", "generate")
    results = chat_run(cli, tmp_path / "gen", "openai-chat:tiny-gpt2", *flags)
    assert results["tasks"]["parus"]["protocol"] == "generate-match"


def test_the_chat_backend_scores_and_generates_for_messages(vllm_server):
    backend = OpenAIChatModel("tiny-gpt2", vllm_server.url)
    messages = (Message("user", "Кошка сидит на"),)
    assert backend.capabilities.chat_logprobs is None  # --chat-scoring auto: the server is asked when it matters
    assert backend.settle().chat_logprobs is True
    (first, second) = backend.loglikelihood([Loglikelihood(messages, "окне"), Loglikelihood(messages, "окне и спит")])
    assert first.n_tokens >= 1 and second.n_tokens > first.n_tokens and second.logprob < first.logprob
    (text,) = backend.generate([Generation(messages, 5)])
    assert isinstance(text, str)
    assert backend.identity.startswith("openai-chat:tiny-gpt2 ")  # its own cache, apart from openai:
    assert "tokenizer=" not in backend.identity  # the server renders and tokenizes the messages


def test_a_chat_run_on_a_server_that_serves_another_model_is_one_error(cli, vllm_server, tmp_path):
    args = ("run", "-m", "openai-chat:other", "--base-url", vllm_server.url, "-t", "parus", "--limit", "2")
    result = cli(*args, "-o", tmp_path)
    assert result.exit_code == 2 and "does not serve model 'other'" in result.output


def test_the_health_and_tokenize_endpoints_answer(vllm_server):
    assert httpx.get(vllm_server.base + "/health", timeout=30).status_code == 200
    answer = vllm_server.post("/tokenize", {"prompt": "Кошка", "add_special_tokens": True})
    assert answer["count"] == len(answer["tokens"]) > 0 and answer["max_model_len"] == 2048
