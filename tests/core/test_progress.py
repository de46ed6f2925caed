"""Progress off a terminal: a plain line every LOG_EVERY seconds with the count, rate and ETA; a run's ETA
from its tokens, each kind of request at its own speed."""

import re
import time

import pytest
from rich.progress import Progress

from rueval.core import progress
from rueval.core.errors import RuevalError
from rueval.models.base import Capabilities, Generation, LanguageModel, Loglikelihood, LoglikelihoodResult
from rueval.models.engine import Engine
from rueval.models.token_counts import CHARS_PER_TOKEN, GENERATED_TOKEN_COST, request_tokens


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
    # a line at 5 s and at 10 s: 5 of 100 done at 1/s leaves 95 s; and when it ends, how long it took
    assert lines == [
        "generating: 5/100 requests, 1.0/s, ETA 0:01:35",
        "generating: 10/100 requests, 1.0/s, ETA 0:01:30",
        "generating: 10/100 requests in 0:00:10",
    ]


class ClockedModel(LanguageModel):
    """A backend on the test's clock (time injected, not slept): a log-likelihood takes ``scoring`` seconds
    and a generation ``generating``, each reported as its own batch. No tokenizer: tokens are estimated."""

    identity = "clocked"
    capabilities = Capabilities(loglikelihood=True, generation=True)

    def __init__(self, scoring: float = 1.0, generating: float = 5.0):
        self.scoring, self.generating = scoring, generating

    def loglikelihood(self, requests, on_done=None):
        return self._each(requests, on_done, self.scoring, lambda r: LoglikelihoodResult(-1.0, 1, True))

    def generate(self, requests, on_done=None):
        return self._each(requests, on_done, self.generating, lambda r: r.prompt.upper())

    def _each(self, requests, on_done, seconds, answer):
        for i, request in enumerate(requests):
            progress.monotonic.now += seconds
            on_done([(i, answer(request))])
        return [answer(r) for r in requests]


def shown(line: str) -> tuple[int, int, str]:
    """done, total and the ETA of a plain progress line."""
    done, total, eta = re.search(r": ([\d,]+)/([\d,]+) tokens, .*, ETA (.*)$", line).groups()
    return int(done.replace(",", "")), int(total.replace(",", "")), eta


def test_the_engine_counts_tokens_as_the_backend_reports_them(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    engine = Engine(ClockedModel())
    prompts = ("а" * 26, "б" * 52, "в" * 78, "а" * 26)
    texts = engine.generate([Generation(p, 4) for p in prompts], "MultiQ")
    assert texts == [p.upper() for p in prompts] and engine.computed == 3
    lines = capsys.readouterr().err.splitlines()
    # sorted: а..., б..., в...; each shares nothing with the one before it: 10, 20, 30 tokens and 4 each
    assert [shown(line)[:2] for line in lines[:-1]] == [(14, 72), (38, 72), (72, 72)]
    assert lines[-1] == "MultiQ: 72/72 tokens in 0:00:15"


def test_the_eta_at_half_the_tokens_follows_each_kind_s_own_speed(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    # 60 scored tokens at 10 tokens/s; 140 generated tokens (cost 560) at 5 cost units/s
    with progress.counting("run", 200, "tokens", {"loglikelihood": 60.0, "generate": 560.0}) as counter:
        for _ in range(6):
            clock.now += 1.0
            counter.advance(10, "loglikelihood")
        assert counter.seconds_left() == pytest.approx(56.0)  # generation not seen: as fast as scoring per cost
        for _ in range(4):
            clock.now += 8.0
            counter.advance(10, "generate", 40.0)
        # half the tokens done: the 400 cost units of generation left take 80 s at generation's own speed
        assert counter.done == 100 and counter.seconds_left() == pytest.approx(80.0)
        clock.now += 5.0  # counted down between advances
        assert counter.seconds_left() == pytest.approx(75.0)
    assert shown(capsys.readouterr().err.splitlines()[-2]) == (100, 200, "0:01:20")


def test_a_generation_heavy_run_is_estimated_by_the_prior_before_its_first_generation(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)  # a line at every finished request
    monkeypatch.setattr(progress, "_level", progress.VERBOSE)
    scored = [Loglikelihood("к" * 26 * (i + 1), " д") for i in range(10)]
    budget = 100
    Engine(ClockedModel(scoring=1.0, generating=50.0)).compute([*scored, Generation("вопрос", budget)], "mixed")
    lines = capsys.readouterr().err.splitlines()
    tokens = request_tokens([(scored, lambda r: r.context + r.continuation)], None)
    prompts, asked = sum(t.prompt for t in tokens.values()), round(len("вопрос") / CHARS_PER_TOKEN)
    counted = [line for line in lines if ", ETA " in line]
    done, total, eta = shown(counted[len(scored) - 1])  # every log-likelihood done, no generation yet
    assert (done, total) == (prompts, prompts + asked + budget)
    speed = prompts / len(scored)  # scored tokens per second
    assert eta == progress._clock((asked + GENERATED_TOKEN_COST * budget) / speed)
    # --verbose: the tokens to compute, and then each kind's time
    assert f"mixed: {prompts + asked} prompt tokens and {budget} of generation budgets to compute" in lines[1]
    assert (
        lines[-1]
        == f"mixed: {prompts} scored tokens in 10.0 s; generations' {asked} prompt and {budget} budget tokens in 50.0 s"
    )


def test_the_bar_shows_the_counter_s_eta(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress, "monotonic", clock)
    counter = progress.Counter("run", 100, "tokens")
    clock.now += 10.0
    counter.advance(20)
    bar = Progress()
    bar.add_task("run", total=100, counter=counter)
    task = bar.tasks[0]
    assert progress._Remaining().render(task).plain == "0:00:40"


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
