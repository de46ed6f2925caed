"""Scaling the `openai:` backend when servers fail or change: several servers (fault injection:
tests/models/fault_server.py on 127.0.0.1) of which one is unreachable, failing or serving other
weights, a cache identity that follows the served weights, and a request cache that can be turned
off, refreshed, and survives damaged files. Two real vLLM servers sharing a run: tests/models/
test_vllm_served.py."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time

import pytest
from fault_server import FaultServer

from rueval.core.errors import RuevalError
from rueval.models.backends.openai import OpenAICompletionsModel
from rueval.models.backends.serving import Dispatcher, parse_base_urls, route
from rueval.models.backends.tiny import build_tiny_gpt2
from rueval.models.base import Capabilities, LanguageModel, Loglikelihood, LoglikelihoodResult
from rueval.models.cache import FORMAT, RequestCache
from rueval.models.engine import Engine
from rueval.models.factory import ModelOptions, open_engine

DEMOS = "Пример: Кошка сидит на окне. Ответ: да\n\n" * 8  # longer than the characters that choose a server
REQUESTS = [
    Loglikelihood(f"{DEMOS}Вопрос номер {i}: правда ли это? Ответ:", c) for i in range(6) for c in (" да", " нет")
]
REQUESTS += [Loglikelihood(f"Без примеров {i}: правда ли это? Ответ:", " да") for i in range(10)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def other_weights_dir(tmp_path_factory):
    """The tiny GPT-2 with other random weights (another seed), the same tokenizer recipe."""
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-other"), seed=1)


@pytest.fixture(scope="module")
def two_servers(tiny_gpt2_dir):
    with FaultServer(tiny_gpt2_dir) as a, FaultServer(tiny_gpt2_dir) as b:
        yield a, b


@pytest.fixture
def servers(two_servers):
    for s in two_servers:
        s.fail_next, s.delay, s.completion_requests, s.failures_served = 0, 0.0, 0, 0
    return two_servers


def scores(results: list[LoglikelihoodResult]) -> list[tuple[float, int, bool]]:
    return [(round(r.logprob, 4), r.n_tokens, r.greedy) for r in results]


def test_an_unreachable_server_among_several_is_reported_and_the_run_goes_on(servers, caplog):
    a, _ = servers
    dead = f"http://127.0.0.1:{free_port()}/v1"
    expected = OpenAICompletionsModel("tiny-gpt2", a.url).loglikelihood(REQUESTS)
    with caplog.at_level(logging.WARNING):
        results = OpenAICompletionsModel("tiny-gpt2", [dead, a.url]).loglikelihood(REQUESTS)
    assert scores(results) == scores(expected)
    assert dead in caplog.text and "left out" in caplog.text


def test_a_failing_servers_requests_move_to_the_others(servers, caplog):
    a, b = servers
    expected = OpenAICompletionsModel("tiny-gpt2", a.url).loglikelihood(REQUESTS)
    b.fail_next = 1000
    backend = OpenAICompletionsModel(
        "tiny-gpt2", [a.url, b.url], prompts_per_request=1, max_retries=1, retry_delay=0.01
    )
    with caplog.at_level(logging.WARNING):
        assert scores(backend.loglikelihood(REQUESTS)) == scores(expected)
    assert b.failures_served > 0 and b.url in caplog.text


def test_when_every_server_fails_the_error_names_the_last(servers):
    a, b = servers
    a.fail_next = b.fail_next = 1000
    backend = OpenAICompletionsModel("tiny-gpt2", [a.url, b.url], max_retries=0)
    with pytest.raises(RuevalError, match=r"kept failing after 1 tries \(HTTP 503\)"):
        backend.loglikelihood(REQUESTS)


def test_a_server_serving_another_model_stops_the_run_before_any_scoring(tiny_gpt2_dir, other_weights_dir):
    with (
        FaultServer(tiny_gpt2_dir) as a,
        FaultServer(tiny_gpt2_dir, name="other-model") as b,
        FaultServer(other_weights_dir) as c,
    ):
        with pytest.raises(
            RuevalError, match=f"the server at {b.url} does not serve model 'tiny-gpt2'; it serves: other-model"
        ):
            Engine(OpenAICompletionsModel("tiny-gpt2", [a.url, b.url])).loglikelihood(REQUESTS)
        with pytest.raises(RuevalError, match=f"different weights as 'tiny-gpt2': {a.url} has .*, {c.url} has "):
            Engine(OpenAICompletionsModel("tiny-gpt2", [a.url, c.url])).loglikelihood(REQUESTS)
        assert a.completion_requests == b.completion_requests == c.completion_requests == 0


def test_new_weights_behind_the_same_name_and_port_are_computed_again(tiny_gpt2_dir, other_weights_dir, tmp_path):
    port = free_port()
    with FaultServer(tiny_gpt2_dir, port=port) as first:
        engine = Engine(OpenAICompletionsModel("tiny-gpt2", first.url), RequestCache(tmp_path / "cache.sqlite"))
        before = engine.loglikelihood(REQUESTS)
        again = Engine(OpenAICompletionsModel("tiny-gpt2", first.url), RequestCache(tmp_path / "cache.sqlite"))
        again.loglikelihood(REQUESTS)
        assert again.computed == 0  # the same weights: all from the cache
    with FaultServer(other_weights_dir, port=port) as swapped:
        engine = Engine(OpenAICompletionsModel("tiny-gpt2", swapped.url), RequestCache(tmp_path / "cache.sqlite"))
        after = engine.loglikelihood(REQUESTS)
    assert engine.computed == len(REQUESTS)
    assert [r.logprob for r in after] != pytest.approx([r.logprob for r in before], abs=1e-3)


def test_prompts_sharing_their_start_have_one_home_server():
    homes = {route(r.context + r.continuation, 2) for r in REQUESTS[:12]}
    assert len(homes) == 1  # an episode's demonstrations: one server
    assert len({route(r.context, 2) for r in REQUESTS[12:]}) == 2  # items without them spread


def test_the_dispatcher_keeps_each_servers_chunks_in_order_and_moves_a_slow_servers_work():
    seen: dict[str, list[int]] = {"fast": [], "slow": []}
    lock = threading.Lock()

    def compute(url: str, chunk: int) -> list[int]:
        time.sleep(0.3 if url == "slow" else 0.01)
        with lock:
            seen[url].append(chunk)
        return [chunk * 10]

    got: dict[int, list[int]] = {}
    Dispatcher(["fast", "slow"], concurrency=1).run(list(range(12)), [0] * 6 + [1] * 6, compute, got.__setitem__)
    assert got == {c: [c * 10] for c in range(12)}
    assert seen["fast"][:6] == list(range(6))  # its own queue first, in the order given
    assert len(seen["slow"]) < 6 and set(range(6, 12)) - set(seen["slow"]) <= set(seen["fast"])


def test_a_chunk_waits_for_its_home_server_while_that_server_has_room():
    """Free threads of one server do not take the chunks another server has room for: its
    prefix cache holds their shared starts (threads start one server after the other)."""
    homes = [0, 0, 1, 1, 1]

    def servers_used() -> dict[int, str]:
        used: dict[int, str] = {}

        def compute(url: str, chunk: int) -> list[int]:
            used[chunk] = url
            return [chunk]

        Dispatcher(["a", "b"], concurrency=4).run(list(range(5)), homes, compute, lambda c, v: None)
        return used

    for _ in range(20):  # the threads' start order varies; each time every chunk runs at home
        assert servers_used() == {c: "ab"[home] for c, home in enumerate(homes)}


def test_base_urls_from_a_list_or_a_file(tmp_path):
    assert parse_base_urls("http://a:1/v1/, http://b:2/v1") == ["http://a:1/v1", "http://b:2/v1"]
    listed = tmp_path / "servers.txt"
    listed.write_text("# the GPU nodes\nhttp://a:1/v1\n\nhttp://b:2/v1  # node b\n", encoding="utf-8")
    assert parse_base_urls(f"@{listed}") == ["http://a:1/v1", "http://b:2/v1"]
    with pytest.raises(RuevalError, match="cannot read the file of server URLs"):
        parse_base_urls(f"@{tmp_path / 'missing.txt'}")
    with pytest.raises(RuevalError, match="'a:1/v1' is not an http"):
        parse_base_urls("a:1/v1")


def test_a_file_of_urls_that_is_a_pipe_or_a_folder_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # opening it to read would block until something writes it
    with pytest.raises(RuevalError, match=r"cannot read the file of server URLs \(.*pipe: a named pipe \(FIFO\)"):
        parse_base_urls(f"@{tmp_path / 'pipe'}")
    with pytest.raises(RuevalError, match="a folder where a file is expected"):
        parse_base_urls(f"@{tmp_path}")


class Counting(LanguageModel):
    """A fake backend: minus the context's length as the log-likelihood; counts what it computes."""

    identity = "counting"
    capabilities = Capabilities(loglikelihood=True)

    def __init__(self, offset: float = 0.0):
        self.offset = offset
        self.calls = 0

    def loglikelihood(self, requests, on_done=None):
        self.calls += len(requests)
        return [LoglikelihoodResult(-len(r.context) - self.offset, 1, True) for r in requests]

    def generate(self, requests, on_done=None):
        raise NotImplementedError


def test_refresh_computes_again_and_overwrites(tmp_path):
    path = tmp_path / "cache.sqlite"
    Engine(Counting(), RequestCache(path)).loglikelihood(REQUESTS)
    model = Counting(offset=1.0)  # the same identity, now giving other results
    assert Engine(model, RequestCache(path)).loglikelihood(REQUESTS)[0].logprob == -len(REQUESTS[0].context)
    assert model.calls == 0
    refreshed = Engine(model, RequestCache(path, refresh=True)).loglikelihood(REQUESTS)
    assert model.calls == len(REQUESTS) and refreshed[0].logprob == -len(REQUESTS[0].context) - 1
    reread = Counting()
    assert Engine(reread, RequestCache(path)).loglikelihood(REQUESTS)[0].logprob == -len(REQUESTS[0].context) - 1
    assert reread.calls == 0


def test_cache_modes_are_options(monkeypatch, tmp_path, tiny_gpt2_dir):
    monkeypatch.setenv("RUEVAL_CACHE_DIR", str(tmp_path))
    assert open_engine(f"hf:{tiny_gpt2_dir}", ModelOptions(cache="off")).cache is None
    assert open_engine(f"hf:{tiny_gpt2_dir}", ModelOptions(cache="refresh")).cache.refresh
    with pytest.raises(RuevalError, match="--cache sometimes: expected one of on, off, refresh"):
        open_engine(f"hf:{tiny_gpt2_dir}", ModelOptions(cache="sometimes"))


def test_a_damaged_cache_file_is_reported_and_ignored(tmp_path, caplog):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    model = Counting()
    with caplog.at_level(logging.WARNING):
        results = Engine(model, RequestCache(path)).loglikelihood(REQUESTS)
    assert [r.logprob for r in results] == [-len(r.context) for r in REQUESTS] and model.calls == len(REQUESTS)
    assert f"the request cache {path} is ignored: it cannot be read" in caplog.text
    assert path.read_bytes() == b"not a database at all" * 100  # left as it was


def test_a_cache_file_from_a_newer_rueval_is_reported_and_neither_read_nor_written(tmp_path, caplog):
    path = tmp_path / "cache.sqlite"
    Engine(Counting(offset=5.0), RequestCache(path)).loglikelihood(REQUESTS[:2])
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {FORMAT + 1}")
    model = Counting()
    with caplog.at_level(logging.WARNING):
        results = Engine(model, RequestCache(path)).loglikelihood(REQUESTS)
    assert [r.logprob for r in results] == [-len(r.context) for r in REQUESTS]  # nothing of the old file mixed in
    assert "written by a newer rueval" in caplog.text and str(path) in caplog.text
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 2
