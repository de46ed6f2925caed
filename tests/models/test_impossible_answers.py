"""Answers from OpenAI-compatible servers are checked as they are read: a log-probability that is no
number, NaN, infinite or positive, or an answer naming another model, is an error naming the server
and the request, and never reaches the request cache (the engine's own check, for every backend, is
tests/models/test_result_checks.py).

The server is the tests' fault-injection OpenAI-compatible server (tests/models/fault_server.py) with its
fault-injection switches (``fault_logprob``, ``fault_model``): no real server answers NaN on demand.
"""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from support import require_modules

require_modules("torch", "transformers", extra="lm")

from fault_server import FaultServer

from rueval.models.backends.openai import OpenAICompletionsModel
from rueval.models.backends.openai_chat import OpenAIChatModel
from rueval.models.base import ImpossibleAnswer, Loglikelihood, Message, TokenLogprobs
from rueval.models.cache import RequestCache
from rueval.models.engine import Engine

PAIR = Loglikelihood("Кошка сидит на", " окне")


@pytest.fixture(scope="module")
def running_server(chat_model):
    with FaultServer(chat_model) as server:
        yield server


@pytest.fixture
def server(running_server):
    running_server.fault_logprob, running_server.fault_model, running_server.aliases = None, None, ()
    return running_server


def rows(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (math.nan, "a log-probability of nan"),
        (math.inf, "a log-probability of inf"),
        (-math.inf, "a log-probability of -inf"),
        (0.5, "a positive log-probability (0.5, a probability above 1)"),
        ("abc", "a log-probability that is no number ('abc')"),
    ],
)
def test_an_impossible_logprob_from_a_server_names_the_server_and_the_request_and_is_never_cached(
    server, tmp_path, fault, said
):
    server.fault_logprob = fault
    engine = Engine(OpenAICompletionsModel("tiny-gpt2", server.url), RequestCache(tmp_path / "cache.sqlite"))
    with pytest.raises(ImpossibleAnswer) as caught:
        engine.loglikelihood([PAIR])
    message = str(caught.value)
    assert message.startswith(f"the server at {server.url} answered {said} for a token of the request")
    assert "'Кошка сидит на' + ' окне'" in message
    assert rows(tmp_path / "cache.sqlite") == 0


def test_a_texts_impossible_token_logprob_is_refused_alike(server, tmp_path):
    server.fault_logprob = math.inf
    engine = Engine(OpenAICompletionsModel("tiny-gpt2", server.url), RequestCache(tmp_path / "cache.sqlite"))
    with pytest.raises(ImpossibleAnswer) as caught:
        engine.token_logprobs([TokenLogprobs("Мама мыла раму.")])
    message = str(caught.value)
    assert message.startswith(f"the server at {server.url} answered a log-probability of inf for a token of")
    assert "'Мама мыла раму.'" in message
    assert rows(tmp_path / "cache.sqlite") == 0


def test_a_chat_server_answering_nan_prompt_logprobs_is_refused_alike(server, tmp_path):
    server.fault_logprob = math.nan
    model = OpenAIChatModel("tiny-gpt2", server.url, scoring="logprobs")
    engine = Engine(model, RequestCache(tmp_path / "cache.sqlite"))
    with pytest.raises(ImpossibleAnswer, match=f"the server at {server.url} answered a log-probability of nan"):
        engine.loglikelihood([Loglikelihood((Message("user", "Где кошка?"),), "На окне")])
    assert rows(tmp_path / "cache.sqlite") == 0


def test_a_run_against_a_server_answering_nan_exits_with_one_line_and_writes_no_results(cli, server, tmp_path):
    server.fault_logprob = math.nan
    out = tmp_path / "run"
    result = cli("run", "-m", "openai:tiny-gpt2", "--base-url", server.url, "-t", "parus", "--limit", "4", "-o", out)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert line.startswith(f"error: the server at {server.url} answered a log-probability of nan")
    assert "Traceback" not in result.output and not (out / "results.json").exists()
    server.fault_logprob = None  # the same run on an honest server: nothing of the NaNs was kept
    result = cli("run", "-m", "openai:tiny-gpt2", "--base-url", server.url, "-t", "parus", "--limit", "4", "-o", out)
    assert result.exit_code == 0, result.output
    score = json.loads((out / "results.json").read_text(encoding="utf-8"))["tasks"]["parus"]["score"]
    assert math.isfinite(score)


def test_an_answer_for_another_model_is_refused_naming_the_server(server):
    server.fault_model = "other-model"
    with pytest.raises(Exception, match=f"the server at {server.url}/completions answered for the model 'other-model'"):
        OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood([PAIR])


def test_an_answer_naming_another_served_name_of_the_same_weights_is_the_same_model(server):
    server.aliases = ("tiny-alias",)  # vLLM --served-model-name tiny-gpt2 tiny-alias: answers name tiny-gpt2
    by_alias = OpenAICompletionsModel("tiny-alias", server.url).loglikelihood([PAIR])
    assert by_alias == OpenAICompletionsModel("tiny-gpt2", server.url).loglikelihood([PAIR])
