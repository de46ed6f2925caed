"""Every result is checked where it enters the engine, whichever backend gave it: a log-probability
that is no number, NaN, infinite or positive, a token count that is not a positive whole number, a
greedy flag that is not true or false, a generation that is no text stop the run with an error naming
the model and the request, and are never cached; a cached row that fails the same check is computed
again, and the run says so."""

from __future__ import annotations

import math
import sqlite3

import pytest

from rueval.models.base import (
    Capabilities,
    Generation,
    ImpossibleAnswer,
    LanguageModel,
    Loglikelihood,
    LoglikelihoodResult,
)
from rueval.models.cache import RequestCache, request_key
from rueval.models.engine import Engine

PAIR = Loglikelihood("Кошка сидит на", " окне")


def rows(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


class FaultyBackend(LanguageModel):
    """A fault-injection double: a backend answering ``result`` to every log-likelihood request and
    ``text`` to every generation (a real backend gives neither on demand)."""

    identity = "faulty:model"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def __init__(self, result=None, text=""):
        self.result, self.text = result, text
        self.calls = 0

    def loglikelihood(self, requests, on_done=None):
        self.calls += len(requests)
        return [self.result for _ in requests]

    def generate(self, requests, on_done=None):
        self.calls += len(requests)
        return [self.text for _ in requests]


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (LoglikelihoodResult(math.nan, 1, False), "a log-probability of nan"),
        (LoglikelihoodResult(-1.0, 0, False), "a token count of 0 (expected a positive whole number)"),
        (LoglikelihoodResult(-1.0, -2, False), "a token count of -2 (expected a positive whole number)"),
        (LoglikelihoodResult(-1.0, "3", False), "a token count of '3' (expected a positive whole number)"),
        (LoglikelihoodResult(-1.0, 1.5, False), "a token count of 1.5 (expected a positive whole number)"),
        (LoglikelihoodResult(-1.0, 1, "yes"), "a greedy flag of 'yes' (expected true or false)"),
    ],
)
def test_any_backends_impossible_result_stops_the_engine_naming_the_model_and_the_request(tmp_path, result, said):
    engine = Engine(FaultyBackend(result), RequestCache(tmp_path / "cache.sqlite"))
    with pytest.raises(ImpossibleAnswer) as caught:
        engine.loglikelihood([PAIR])
    assert str(caught.value) == f"faulty:model answered {said} for the request 'Кошка сидит на' + ' окне'; not cached"
    assert rows(tmp_path / "cache.sqlite") == 0


def test_a_generation_that_is_no_text_is_refused():
    with pytest.raises(ImpossibleAnswer, match="faulty:model answered a generation that is no text \\(None\\)"):
        Engine(FaultyBackend(text=None)).generate([Generation("Кошка", 3)])


class MiscountingBackend(FaultyBackend):
    """A backend answering ``answers(requests)`` as its list of results, or reporting ``reported`` as done."""

    def __init__(self, answers, reported=None):
        super().__init__(LoglikelihoodResult(-1.0, 1, False))
        self.answers, self.reported = answers, reported

    def loglikelihood(self, requests, on_done=None):
        if self.reported is not None:
            on_done(self.reported)
        return self.answers([self.result for _ in requests])


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        (MiscountingBackend(lambda results: results[:-1]), "faulty:model answered 1 results for 2 requests"),
        (MiscountingBackend(lambda results: results * 2), "faulty:model answered 4 results for 2 requests"),
        (MiscountingBackend(lambda results: None), "faulty:model answered None for 2 requests"),
        (MiscountingBackend(list, reported=[(5, None)]), "faulty:model reported a result for request 5 of 2"),
    ],
)
def test_a_backend_answering_another_number_of_results_than_requests_is_refused(tmp_path, backend, said):
    engine = Engine(backend, RequestCache(tmp_path / "cache.sqlite"))
    with pytest.raises(ImpossibleAnswer, match=said):
        engine.loglikelihood([PAIR, Loglikelihood("Кошка сидит на", " полу")])
    assert rows(tmp_path / "cache.sqlite") == 0


@pytest.mark.parametrize(
    "row",
    [
        {"logprob": "abc", "n_tokens": 1, "greedy": True},
        {"logprob": math.nan, "n_tokens": 1, "greedy": True},
        {"logprob": -1.0, "n_tokens": 0, "greedy": True},
        {"logprob": -1.0},
        [1, 2],
        "text",
    ],
)
def test_a_cached_row_that_fails_the_check_is_computed_again_and_said_so(tmp_path, row, capsys):
    cache = RequestCache(tmp_path / "cache.sqlite")
    backend = FaultyBackend(LoglikelihoodResult(-2.5, 2, True))
    cache.put_many({request_key(backend.identity, PAIR): row})
    (result,) = Engine(backend, cache).loglikelihood([PAIR])
    assert result == LoglikelihoodResult(-2.5, 2, True) and backend.calls == 1
    warning = capsys.readouterr().err
    assert f"the request cache {tmp_path / 'cache.sqlite'} holds 1 results that fail their check" in warning
    assert "computing them again" in warning
    again = FaultyBackend(LoglikelihoodResult(-9.0, 1, False))
    assert Engine(again, RequestCache(tmp_path / "cache.sqlite")).loglikelihood([PAIR]) == [result]  # overwritten
    assert again.calls == 0
