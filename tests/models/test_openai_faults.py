"""The `openai:` backend when servers fail: fault injection (tests/models/fault_server.py serving the
tiny GPT-2 on 127.0.0.1) for what a real vLLM server will not do on demand. How `openai:` scores and
generates against a real one is tested in tests/models/test_vllm_served.py."""

from __future__ import annotations

import socket
import time

import pytest
from support import require_modules

require_modules("torch", "transformers", extra="lm")

from fault_server import FaultServer
from text_prompts import PAIRS, text_reference

from rueval.core.errors import RuevalError
from rueval.models.backends.openai import OpenAICompletionsModel
from rueval.models.backends.serving import Waiting
from rueval.models.base import Generation, Loglikelihood, TokenLogprobs
from rueval.models.cache import RequestCache
from rueval.models.engine import Engine


@pytest.fixture(scope="module")
def running_server(tiny_gpt2_dir):
    with FaultServer(tiny_gpt2_dir) as server:
        yield server


@pytest.fixture
def server(running_server, tiny_gpt2_dir):
    """The module's server with its switches off and its counters at zero."""
    s = running_server
    s.root = str(tiny_gpt2_dir)
    s.logprobs_supported, s.refuse_zero_max_tokens, s.fail_next, s.delay, s.api_key = True, False, 0, 0.0, None
    s.retry_after, s.drop_next = None, 0
    s.system_fingerprint, s.created = None, None
    s.fault_logprob, s.fault_model, s.aliases = None, None, ()
    s.completion_requests = s.failures_served = s.peak_in_flight = 0
    return s


def test_identity_is_the_model_name_and_what_the_server_says_about_the_weights(server):
    server.created = 1_600_000_000
    identity = OpenAICompletionsModel("tiny-gpt2", server.url + "/").identity
    # prompts go as token ids from the served folder's tokenizer (found through root): the identity says so
    assert identity == f"openai:tiny-gpt2 created=1600000000 root={server.root} tokenizer={server.root}"
    server.created = 1_600_000_001  # restarted on other weights: another identity
    assert OpenAICompletionsModel("tiny-gpt2", server.url).identity != identity
    server.system_fingerprint = "fp_1"
    assert " system_fingerprint=fp_1 " in OpenAICompletionsModel("tiny-gpt2", server.url).identity


def test_a_created_time_that_is_the_answers_own_clock_is_left_out(server):
    server.created = None  # as vLLM's /v1/models: the time of the answer
    assert "created=" not in OpenAICompletionsModel("tiny-gpt2", server.url).identity


def test_a_changed_system_fingerprint_during_the_run_is_refused(server):
    server.system_fingerprint = "fp_1"
    backend = OpenAICompletionsModel("tiny-gpt2", server.url)
    assert "system_fingerprint=fp_1" in backend.identity
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


def test_texts_token_logprobs_come_through_503s_and_a_server_refusing_max_tokens_zero(server, tiny_gpt2_dir):
    """The texts' token log-probabilities (the contamination audit's) go the log-likelihoods' way: retried, and
    asked again with max_tokens 1 where 0 is refused; they are hf:'s on the same weights."""
    from rueval.models.backends.hf import HFCausalLM

    requests = [TokenLogprobs(r.continuation) for r in PAIRS] + [TokenLogprobs("Мама мыла раму. 🙂")]
    expected = HFCausalLM(str(tiny_gpt2_dir)).token_logprobs(requests)
    server.refuse_zero_max_tokens, server.fail_next = True, 2
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, max_retries=3, retry_delay=0.01, prompts_per_request=4)
    results = backend.token_logprobs(requests)
    assert server.failures_served == 2 and backend._scoring_max_tokens == 1
    for ours, theirs in zip(results, expected, strict=True):
        assert list(ours.logprobs) == pytest.approx(theirs.logprobs, abs=1e-4)


def test_a_contamination_audit_against_a_server_without_prompt_logprobs_is_one_error(cli, server, tmp_path):
    server.logprobs_supported = False
    model = ("-m", "openai:tiny-gpt2", "--base-url", server.url)
    result = cli("contamination", *model, "-t", "terra", "-q", "-o", tmp_path / "audit")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: the server at {server.url} returned no prompt logprobs")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "audit" / "contamination.json").exists()


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


def test_requests_run_concurrently_and_prompts_share_http_requests(server):
    requests = [Loglikelihood(f"Пример номер {i}:", " да") for i in range(8)]
    one_each = OpenAICompletionsModel("tiny-gpt2", server.url, concurrency=4, prompts_per_request=1)
    assert one_each.identity  # the first contact (listing, probe), outside the timing
    server.delay, server.completion_requests = 1.0, 0
    start = time.monotonic()
    parallel = one_each.loglikelihood(requests)
    assert time.monotonic() - start < 5 * server.delay  # two waves of four; one at a time would take 8 s
    assert server.peak_in_flight >= 2 and server.completion_requests == 8
    server.delay, server.completion_requests = 0.0, 0
    batched = OpenAICompletionsModel("tiny-gpt2", server.url, prompts_per_request=4).loglikelihood(requests)
    assert server.completion_requests == 2
    assert [r.logprob for r in batched] == pytest.approx([r.logprob for r in parallel], abs=1e-4)


def test_a_run_without_base_url_is_one_error(cli, tmp_path):
    missing = cli("run", "-m", "openai:tiny-gpt2", "-t", "parus", "-o", tmp_path / "other")
    assert missing.exit_code == 2 and "--base-url" in missing.stderr


def test_without_the_served_tokenizer_prompts_go_as_text_with_a_warning(server, plain, capsys):
    server.root = "/nowhere/tiny-gpt2"  # its weights folder is not on this machine, and it has no /tokenize
    results = OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood(PAIRS[:2])
    warning = capsys.readouterr().err
    assert "warning: openai:tiny-gpt2: prompts go as text (the server has no /tokenize endpoint" in warning
    assert "scores may differ from hf:'s" in warning and "--tokenizer PATH_OR_HUB_ID" in warning
    assert [r.logprob for r in results] == pytest.approx([text_reference(plain, r)[0] for r in PAIRS[:2]], abs=1e-4)
    with pytest.raises(RuevalError, match="no /tokenize endpoint .* pass the served model's tokenizer"):
        OpenAICompletionsModel("tiny-gpt2", server.url, tokenizer="server").loglikelihood(PAIRS[:1])


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


def idle(server) -> None:
    """Wait for the requests a timed-out client left on the server: none may still run when the tests end."""
    deadline = time.monotonic() + 30
    while server._in_flight and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # its answer is written to the closed connection


def test_a_server_that_never_answers_is_reported_while_waiting_and_given_up_after_the_timeout(
    server, monkeypatch, capsys
):
    monkeypatch.setattr("rueval.models.backends.serving.LOG_EVERY", 0.2)
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, timeout=1.0, retry_delay=0.01)
    assert backend.identity  # the servers are asked for their weights first, answered at once
    server.delay = 3.0
    start = time.monotonic()
    with pytest.raises(RuevalError, match=r"did not answer within 1 s; --timeout SECONDS waits longer"):
        backend.loglikelihood(PAIRS[:1])
    assert time.monotonic() - start < 2  # not six tries of a minute each
    idle(server)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("waiting for")]
    assert len(lines) >= 3
    assert lines[0].startswith(f"waiting for the server at {server.url}: 1 requests unanswered, the oldest for")
    assert lines[0].endswith("s (given up after 1 s: --timeout)")


def test_the_first_waiting_line_comes_log_every_seconds_after_the_silence_began(monkeypatch):
    """Not at the next tick of a clock an earlier, answered request started: that came up to twice as late."""
    monkeypatch.setattr("rueval.models.backends.serving.LOG_EVERY", 1.0)
    said: list[float] = []
    monkeypatch.setattr("rueval.models.backends.serving.info", lambda line: said.append(time.monotonic()))
    waiting = Waiting(timeout=10)
    with waiting.on("http://a/v1"):  # answered at once: the timer starts here
        pass
    time.sleep(0.6)
    with waiting.on("http://a/v1"):  # silent from here
        started = time.monotonic()
        time.sleep(1.6)
    assert said and 1.0 <= said[0] - started < 1.3


def test_retries_stop_when_the_timeout_is_used_up(server):
    backend = OpenAICompletionsModel("tiny-gpt2", server.url, timeout=1.0, max_retries=50, retry_delay=0.2)
    assert backend.identity  # the first contact (listing, probe), outside the timing
    server.fail_next = 100
    start = time.monotonic()
    with pytest.raises(RuevalError, match=r"kept failing after [2-5] tries \(HTTP 503\)"):
        backend.loglikelihood(PAIRS[:1])
    assert time.monotonic() - start < 1.5


def test_the_timeout_option_reaches_the_server_client(cli, server, tmp_path):
    server.delay = 2.0
    flags = ("-m", "openai:tiny-gpt2", "--base-url", server.url, "-t", "parus", "--limit", "2")
    result = cli("run", *flags, "--timeout", "0.5", "-o", tmp_path / "run")
    assert result.exit_code == 2
    assert f"the server at {server.url}/completions did not answer within 0.5 s" in result.stderr
    idle(server)
    assert not (tmp_path / "run" / "results.json").exists()
    for bad in ("inf", "nan", "0"):
        refused = cli("run", *flags, "--timeout", bad, "-o", tmp_path / "other")
        assert refused.exit_code == 2 and "--timeout" in refused.output, bad
