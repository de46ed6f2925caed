"""Progress off a terminal: a plain line every LOG_EVERY seconds with the count, rate and ETA."""

import re
import time

import pytest

from rueval.core import progress
from rueval.core.errors import RuevalError
from rueval.models.base import Generation
from rueval.models.engine import Engine


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_plain_lines_give_count_rate_and_eta_every_few_seconds(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    with progress.counting("generating", 100, "requests") as counter:
        for _ in range(10):
            clock.now += 1.0  # one request per second
            counter.advance()
    lines = capsys.readouterr().err.splitlines()
    # a line at 5 s and at 10 s: 5 of 100 done at 1/s leaves 95 s
    assert lines == [
        "generating: 5/100 requests, 1.0/s, ETA 0:01:35",
        "generating: 10/100 requests, 1.0/s, ETA 0:01:30",
    ]


class CountingModel:
    """A backend that reports every request as its own batch."""

    identity = "counting"

    def generate(self, requests, on_done=None):
        for i, request in enumerate(requests):
            progress.monotonic.now += 5.0
            on_done([(i, request.prompt.upper())])
        return [r.prompt.upper() for r in requests]


def test_the_engine_counts_requests_as_the_backend_reports_them(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    engine = Engine(CountingModel())
    texts = engine.generate([Generation(p, 4) for p in ("а", "б", "в", "а")], "MultiQ")
    assert texts == ["А", "Б", "В", "А"] and engine.computed == 3
    lines = capsys.readouterr().err.splitlines()
    assert [re.sub(r", .*", "", line) for line in lines] == [f"MultiQ: {n}/3 requests" for n in (1, 2, 3)]


def test_a_long_step_says_what_it_does_and_how_long_it_took(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    monkeypatch.setattr(progress, "STEP_NOTICE", 0.05)
    with progress.step("fitting TF-IDF on 2,616 train texts") as fitting:
        time.sleep(1.0)  # real time: the notice comes after STEP_NOTICE seconds
        clock.now += 3.14
        fitting.outcome = "5,000 features"
    assert capsys.readouterr().err.splitlines() == [
        "fitting TF-IDF on 2,616 train texts...",
        "fitting TF-IDF on 2,616 train texts: done in 3.1 s, 5,000 features",
    ]


def test_a_short_step_says_only_that_it_is_done(monkeypatch, capsys):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    with progress.step("choosing rules"):
        pass
    time.sleep(progress.STEP_NOTICE + 0.2)  # the notice was cancelled, not merely late
    assert re.fullmatch(r"choosing rules: done in 0\.\d s\n", capsys.readouterr().err)


def test_a_step_that_fails_at_once_says_nothing(monkeypatch, capsys):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    with pytest.raises(ValueError, match="no weights"):
        with progress.step("loading hf:broken"):
            raise ValueError("no weights")
    time.sleep(progress.STEP_NOTICE + 0.2)
    assert capsys.readouterr().err == ""  # the error is the one line the user sees


def test_quiet_hides_progress_and_information_but_not_warnings(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    progress.set_level(quiet=True)
    with progress.counting("generating", 10, "requests") as counter:
        for _ in range(10):
            clock.now += 5.0
            counter.advance()
    with progress.step("fitting"):
        pass
    progress.info("loaded 3 tasks")
    progress.detail("TERRa: 307 val examples")
    progress.warn("limited scores are not the benchmark's")
    assert capsys.readouterr().err.splitlines() == ["warning: limited scores are not the benchmark's"]


def test_verbose_adds_detail_lines(monkeypatch, capsys):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    progress.detail("hidden by default")
    progress.set_level(verbose=True)
    progress.info("shown")
    progress.detail("TERRa: 307 val examples")
    assert capsys.readouterr().err.splitlines() == ["shown", "TERRa: 307 val examples"]


def test_quiet_and_verbose_together_are_refused(monkeypatch):
    monkeypatch.setattr(progress, "_level", progress.NORMAL)
    with pytest.raises(RuevalError, match="--quiet and --verbose"):
        progress.set_level(quiet=True, verbose=True)
