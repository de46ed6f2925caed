"""The `openai:` backend against a real HTTP server (tests/openai_server.py) that serves the tiny
GPT-2 on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time

import pytest
from support import require_modules

require_modules("torch", "transformers", extra="lm")

import torch
from openai_server import CompletionServer
from transformers import AutoModelForCausalLM, AutoTokenizer

from rueval.errors import RuevalError
from rueval.models.base import Generation, Loglikelihood
from rueval.models.cache import RequestCache
from rueval.models.engine import Engine
from rueval.models.hf import HFCausalLM
from rueval.models.openai import OpenAICompletionsModel

PAIRS = [
    Loglikelihood("Кошка сидит на", " окне"),
    Loglikelihood("Вопрос: сколько будет два плюс два? Ответ:", " четыре"),
    Loglikelihood("", "Мама мыла раму."),  # TAPE perplexity: the whole text
    Loglikelihood("Ответ: ", "да"),  # the token " д" straddles the boundary
    Loglikelihood("Смайлик", " 🙂 и всё"),  # the emoji is four byte tokens
    Loglikelihood("Смайлик", "🙂"),  # three of them have empty texts and start at the boundary
    Loglikelihood("Смайлик ", "🙂"),  # the trailing space is a token of its own: it is scored
    Loglikelihood("Он сказал 🙂", " и ушёл"),
]


@pytest.fixture(scope="module")
def running_server(tiny_gpt2_dir):
    with CompletionServer(tiny_gpt2_dir) as server:
        yield server


@pytest.fixture
def server(running_server):
    """The module's server with its switches off and its counters at zero."""
    s = running_server
    s.logprobs_supported, s.refuse_zero_max_tokens, s.fail_next, s.delay, s.api_key = True, False, 0, 0.0, None
    s.retry_after, s.drop_next = None, 0
    s.system_fingerprint, s.created = None, None
    s.completion_requests = s.failures_served = s.peak_in_flight = 0
    return s


@pytest.fixture(scope="module")
def plain(tiny_gpt2_dir):
    """The tiny model and tokenizer loaded with plain transformers: the reference."""
    return AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval(), AutoTokenizer.from_pretrained(tiny_gpt2_dir)


def reference(model, ids: list[int], first: int) -> tuple[float, int, bool]:
    """Sum of log P(ids[i] | ids[:i]) for i >= first, one unbatched forward."""
    with torch.no_grad():
        logprobs = model(torch.tensor([ids])).logits[0].log_softmax(-1)
    targets = torch.tensor(ids[first:])
    rows = logprobs[first - 1 : len(ids) - 1]
    return float(rows.gather(1, targets[:, None]).sum()), len(targets), bool((rows.argmax(-1) == targets).all())


def text_reference(plain, request: Loglikelihood) -> tuple[float, int, bool]:
    """What text prompts must give: the server tokenizes context + continuation with no start
    token; the continuation's tokens are those after the (space-stripped) context's tokens,
    and with an empty context the first token, which nothing predicts, is left out."""
    model, tokenizer = plain
    ids = tokenizer(request.context + request.continuation)["input_ids"]
    context_ids = tokenizer(request.context.rstrip())["input_ids"] if request.context else []
    assert ids[: len(context_ids)] == context_ids  # the pairs keep the context's tokens intact
    return reference(model, ids, max(1, len(context_ids)))


def greedy_text(plain, prompt: str, max_new_tokens: int) -> str:
    """What the model generates greedily after ``prompt``."""
    model, tokenizer = plain
    ids = tokenizer(prompt)["input_ids"]
    with torch.no_grad():
        out = model.generate(
            torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.eos_token_id
        )
    return tokenizer.decode(out[0, len(ids) :], skip_special_tokens=True)


def greedy_pair(plain) -> Loglikelihood:
    """A continuation the model itself would choose greedily."""
    return Loglikelihood("Кошка сидит на", greedy_text(plain, "Кошка сидит на", 3))


def test_text_prompts_match_plain_transformers(server, plain):
    requests = [*PAIRS, greedy_pair(plain)]
    results = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(requests)
    for request, result in zip(requests, results, strict=True):
        logprob, n_tokens, greedy = text_reference(plain, request)
        assert result.logprob == pytest.approx(logprob, abs=1e-4), request
        assert (result.n_tokens, result.greedy) == (n_tokens, greedy), request
    assert results[-1].greedy and not results[0].greedy
    assert results[3].n_tokens == 2  # " д" + "а": the straddling token counts for the continuation


def test_token_id_prompts_match_the_hf_backend(server, plain, tiny_gpt2_dir):
    requests = [*PAIRS, greedy_pair(plain)]
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, tokenizer=str(tiny_gpt2_dir))
    hf = HFCausalLM(str(tiny_gpt2_dir)).loglikelihood(requests)
    for request, ours, theirs in zip(requests, backend.loglikelihood(requests), hf, strict=True):
        assert ours.logprob == pytest.approx(theirs.logprob, abs=1e-4), request
        assert (ours.n_tokens, ours.greedy) == (theirs.n_tokens, theirs.greedy), request
    # an empty context scores every token after the start token, as TAPE's perplexity needs
    model, tokenizer = plain
    ids = [tokenizer.eos_token_id, *tokenizer("Мама мыла раму.")["input_ids"]]
    assert backend.loglikelihood([PAIRS[2]])[0].logprob == pytest.approx(reference(model, ids, 1)[0], abs=1e-4)
    assert backend.identity.endswith(f" tokenizer={tiny_gpt2_dir}")


def test_identity_is_the_model_name_and_what_the_server_says_about_the_weights(server):
    server.created = 1_600_000_000
    identity = OpenAICompletionsModel("tiny-gpt2", server.url + "/").identity
    assert identity == f"openai:tiny-gpt2 created=1600000000 root={server.root}"
    server.created = 1_600_000_001  # restarted on other weights: another identity
    assert OpenAICompletionsModel("tiny-gpt2", server.url).identity != identity
    server.system_fingerprint = "fp_1"
    assert OpenAICompletionsModel("tiny-gpt2", server.url).identity.endswith(" system_fingerprint=fp_1")


def test_a_created_time_that_is_the_answers_own_clock_is_left_out(server):
    server.created = None  # as vLLM's /v1/models: the time of the answer
    assert "created=" not in OpenAICompletionsModel("tiny-gpt2", server.url).identity


def test_a_changed_system_fingerprint_during_the_run_is_refused(server):
    server.system_fingerprint = "fp_1"
    backend = OpenAICompletionsModel("tiny-gpt2", server.url)
    assert backend.identity.endswith("fp_1")
    server.system_fingerprint = "fp_2"
    with pytest.raises(RuevalError, match="changed its system_fingerprint from fp_1 to fp_2"):
        backend.loglikelihood(PAIRS[:1])


def test_servers_refusing_max_tokens_zero_get_one_and_the_extra_token_is_ignored(server, plain):
    expected = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(PAIRS)
    server.refuse_zero_max_tokens = True
    results = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(PAIRS)
    assert [(r.n_tokens, r.greedy) for r in results] == [(r.n_tokens, r.greedy) for r in expected]
    assert [r.logprob for r in results] == pytest.approx([r.logprob for r in expected], abs=1e-6)


def test_retries_recover_from_transient_503s(server):
    expected = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(PAIRS[:2])
    server.fail_next = 3
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, max_retries=3, retry_delay=0.01)
    assert backend.loglikelihood(PAIRS[:2]) == expected
    assert server.failures_served == 3


def test_a_retry_waits_as_long_as_the_servers_retry_after_says(server):
    expected = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(PAIRS[:1])
    server.fail_next, server.retry_after = 1, "1"
    start = time.monotonic()
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, max_retries=1, retry_delay=0.01)
    assert backend.loglikelihood(PAIRS[:1]) == expected
    assert server.failures_served == 1 and time.monotonic() - start >= 0.9  # not the 0.01 s of its own backoff


def test_a_dropped_connection_is_retried(server):
    expected = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(PAIRS[:2])
    server.drop_next = 2
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, max_retries=3, retry_delay=0.01)
    assert backend.loglikelihood(PAIRS[:2]) == expected
    assert server.drop_next == 0


def test_persistent_503s_end_in_a_clear_error(server):
    server.fail_next = 100
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, max_retries=2, retry_delay=0.01)
    with pytest.raises(RuevalError, match=r"kept failing after 3 tries \(HTTP 503\): the server is overloaded"):
        backend.loglikelihood(PAIRS[:1])
    assert server.failures_served == 3


def test_a_server_without_prompt_logprobs_is_named_in_a_clear_error(server):
    server.logprobs_supported = False
    backend = OpenAICompletionsModel("tiny-gpt2", server.url)
    with pytest.raises(RuevalError, match=f"the server at {server.url} returned no prompt logprobs .*vLLM"):
        backend.loglikelihood(PAIRS[:1])
    assert backend.generate([Generation("Кошка", 3)])[0]  # generation needs no logprobs


def test_nothing_listening_fails_fast_with_a_clear_error():
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAICompletionsModel("tiny-gpt2", f"http://127.0.0.1:{port}/v1", retry_delay=5)
    start = time.monotonic()
    with pytest.raises(RuevalError, match=f"cannot reach an OpenAI-compatible server at http://127.0.0.1:{port}/v1"):
        backend.loglikelihood(PAIRS[:1])
    assert time.monotonic() - start < 2  # the first contact is not retried


def test_a_wrong_model_name_or_path_gives_a_clear_error(server):
    with pytest.raises(RuevalError, match="does not serve model 'nope'; it serves: tiny-gpt2"):
        OpenAICompletionsModel("nope", server.url).generate([Generation("Кошка", 3)])
    base = server.url.removesuffix("/v1")
    with pytest.raises(RuevalError, match=f"has no {base}/completions .*end in /v1"):
        OpenAICompletionsModel("tiny-gpt2", base).loglikelihood(PAIRS[:1])


def test_a_slow_server_times_out_with_a_clear_error(server):
    server.delay = 1.0
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, timeout=0.3, max_retries=0)
    with pytest.raises(RuevalError, match="did not answer within 0.3 s"):
        backend.loglikelihood(PAIRS[:1])


def test_the_api_key_is_sent_from_the_argument_or_the_environment(server, monkeypatch):
    server.api_key = "s3cret"
    assert OpenAICompletionsModel("tiny-gpt2", server.url, api_key="s3cret").generate([Generation("Кошка", 2)])
    monkeypatch.setenv("OPENAI_API_KEY", "s3cret")
    assert OpenAICompletionsModel("tiny-gpt2", server.url).generate([Generation("Кошка", 2)])
    with pytest.raises(RuevalError, match="refused the API key"):
        OpenAICompletionsModel("tiny-gpt2", server.url, api_key="wrong").generate([Generation("Кошка", 2)])


def test_generation_respects_max_tokens_and_stop_sequences(server, plain):
    backend = OpenAICompletionsModel("tiny-gpt2", server.url)
    prompts = ["Кошка сидит на", "Вопрос: кто написал «Войну и мир»? Ответ:"]
    full = [greedy_text(plain, p, 20) for p in prompts]
    short = backend.generate([Generation(p, 4) for p in prompts])
    assert short == [greedy_text(plain, p, 4) for p in prompts]
    assert all(len(s) < len(f) and f.startswith(s) for s, f in zip(short, full, strict=True))
    stop = full[0][len(full[0]) // 2 :][:3]  # a piece of the greedy text from its second half
    cut = backend.generate([Generation(prompts[0], 20, stop=(stop, "\n\n"))])[0]
    assert cut == full[0][: full[0].index(stop)] and stop not in cut


def test_sampling_is_seeded_per_prompt(server):
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, prompts_per_request=8)
    batch = [Generation(p, 12, top_p=0.8, seed=5) for p in ("Кошка", "Собака", "Мама")]
    texts = backend.generate(batch)
    assert texts == backend.generate(batch) == [backend.generate([g])[0] for g in batch]
    assert texts != backend.generate([Generation(g.prompt, 12, top_p=0.8, seed=6) for g in batch])


def test_requests_run_concurrently_and_prompts_share_http_requests(server):
    server.delay = 0.3
    requests = [Loglikelihood(f"Пример номер {i}:", " да") for i in range(8)]
    start = time.monotonic()
    one_each = OpenAICompletionsModel("tiny-gpt2", server.url, concurrency=4, prompts_per_request=1)
    parallel = one_each.loglikelihood(requests)
    assert time.monotonic() - start < 8 * 0.3  # one at a time would take 2.4 s
    assert server.peak_in_flight >= 2 and server.completion_requests == 8
    server.completion_requests = 0
    batched = OpenAICompletionsModel("tiny-gpt2", server.url, prompts_per_request=4).loglikelihood(requests)
    assert server.completion_requests == 2
    assert [r.logprob for r in batched] == pytest.approx([r.logprob for r in parallel], abs=1e-4)


def test_cli_runs_a_task_through_an_openai_compatible_server(cli, server, tmp_path):
    out = tmp_path / "out"
    result = cli(
        "run", "-m", "openai:tiny-gpt2", "--base-url", server.url, "-t", "parus,terra", "--limit", "4", "-o", out
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "results.json").read_text())
    assert summary["model_identity"].startswith("openai:tiny-gpt2 ") and server.root in summary["model_identity"]
    assert [summary["tasks"][t]["n"] for t in ("parus", "terra")] == [4, 4]
    assert server.completion_requests > 0
    missing = cli("run", "-m", "openai:tiny-gpt2", "-t", "parus", "-o", tmp_path / "other")
    assert missing.exit_code == 2 and "--base-url" in missing.stderr


def test_each_answered_http_request_is_cached_before_a_later_one_fails(server, tmp_path):
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, concurrency=1, prompts_per_request=2, max_retries=0)
    score_chunk = backend._score_chunk

    def breaking_the_server_after_the_first(url, requests):
        results = score_chunk(url, requests)
        server.fail_next = 100
        return results

    backend._score_chunk = breaking_the_server_after_the_first
    with pytest.raises(RuevalError, match="HTTP 503"):
        Engine(backend, RequestCache(tmp_path / "cache.sqlite")).loglikelihood(PAIRS)
    server.fail_next = 0
    rerun = Engine(OpenAICompletionsModel("tiny-gpt2", server.url), RequestCache(tmp_path / "cache.sqlite"))
    results = rerun.loglikelihood(PAIRS)
    assert rerun.computed == len(PAIRS) - 2  # the first HTTP request's two prompts were kept
    expected = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(PAIRS)
    assert [r.logprob for r in results] == pytest.approx([r.logprob for r in expected], abs=1e-5)
