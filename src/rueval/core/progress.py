"""Progress on stderr: a bar with the count and an ETA on a terminal; in logs and pipes, a plain
line every few seconds with the count, the rate and the ETA (long runs on clusters are watched
through their log files). Long steps say what they are doing (``step``), and the command line sets
once how much of this is shown (``set_level``: --quiet, --verbose)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from time import monotonic
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TaskID, TextColumn
from rich.text import Text

from rueval.core.errors import RuevalError

T = TypeVar("T")
LOG_EVERY = 5.0  # seconds between plain progress lines when stderr is not a terminal
STEP_NOTICE = 1.0  # seconds a step runs before it says it is under way
_console = Console(stderr=True)
_showing = False  # a bar is on screen: an inner loop's counter stays quiet (rich shows one live display)
QUIET, NORMAL, VERBOSE = 0, 1, 2
_level = NORMAL


def set_level(quiet: bool = False, verbose: bool = False) -> None:
    """How much is shown: quiet hides progress and information (warnings and errors stay), verbose adds
    detail. Hugging Face's progress bars (downloads, transformers' weight loading) follow quiet too."""
    global _level
    if quiet and verbose:
        raise RuevalError("--quiet and --verbose: give one of them")
    _level = QUIET if quiet else VERBOSE if verbose else NORMAL
    _hugging_face_bars(shown=not quiet)


HF_BARS = "HF_HUB_DISABLE_PROGRESS_BARS"  # read by huggingface_hub, and through it transformers, when imported
# the switches of those libraries once imported: module -> (its function that shows bars, the one that hides them)
HF_SWITCHES = {
    "huggingface_hub.utils": ("enable_progress_bars", "disable_progress_bars"),
    "transformers.utils.logging": ("enable_progress_bar", "disable_progress_bar"),
}
_hid_hf_bars = False  # HF_BARS was set here (by --quiet), not by the user


def _hugging_face_bars(shown: bool) -> None:
    """Show or hide Hugging Face's bars: the environment variable for libraries imported later, their
    switches for those imported already (importing none of them here). A user's own setting stays."""
    global _hid_hf_bars
    if HF_BARS in os.environ and not _hid_hf_bars:
        return
    if shown:
        os.environ.pop(HF_BARS, None)
    else:
        os.environ[HF_BARS] = "1"
    _hid_hf_bars = not shown
    for module, switches in HF_SWITCHES.items():
        if module in sys.modules:
            getattr(sys.modules[module], switches[0] if shown else switches[1])()


def info(message: str) -> None:
    """A line on what is happening, hidden by --quiet."""
    if _level >= NORMAL:
        _say(message)


def detail(message: str) -> None:
    """A line of detail (sizes, counts, timings), shown with --verbose."""
    if _level >= VERBOSE:
        _say(message)


def warn(message: str) -> None:
    """A line the user must see, even with --quiet."""
    _say(f"warning: {message}")


class Step:
    """A long step under way; ``outcome`` is added to its closing line (e.g. "124M parameters")."""

    def __init__(self) -> None:
        self.outcome = ""


@contextmanager
def step(description: str) -> Iterator[Step]:
    """Say, once it has run STEP_NOTICE seconds, that ``description`` is under way, and when it ends
    how long it took. A step that fails at once says nothing: its error stays the one line printed."""
    notice = threading.Timer(STEP_NOTICE, info, (f"{description}...",))
    notice.daemon = True
    notice.start()
    started = monotonic()
    current = Step()
    try:
        yield current
    finally:
        notice.cancel()
    outcome = f", {current.outcome}" if current.outcome else ""
    info(f"{description}: done in {monotonic() - started:.1f} s{outcome}")


def _say(message: str) -> None:
    _console.print(message, markup=False, highlight=False, soft_wrap=True)


class Counter:
    """Work done toward a total; ``advance`` as items finish. The ETA is the work left at the speed
    seen so far, counted down between advances.

    Work of several kinds shown in one unit can cost different times per unit (a run's tokens:
    a generated token takes longer than a scored one): given ``costs``, each kind's total cost in
    a unit common to all kinds, each kind's speed is learned from its own finished work (the time
    since the previous advance is the advancing kind's), and a kind not seen yet is assumed as
    fast, per unit of cost, as the kinds seen. Without ``costs`` an item costs one."""

    def __init__(self, description: str, total: int | None, unit: str, costs: Mapping[str, float] | None = None):
        self.description, self.total, self.unit = description, total, unit
        self.done = 0
        self._start = self._logged = self._last = monotonic()
        self._costs = dict(costs) if costs is not None else {"": float(total or 0)}
        self._done_cost = dict.fromkeys(self._costs, 0.0)
        self._seconds = dict.fromkeys(self._costs, 0.0)
        self._bar: tuple[Progress, TaskID] | None = None
        self._logs = _level > QUIET and not _console.is_terminal  # asked once: rich looks at the environment

    def advance(self, n: int = 1, kind: str = "", cost: float | None = None) -> None:
        """``n`` more units done, of ``kind`` (one of the costs' kinds), costing ``cost`` (by default ``n``)."""
        now = monotonic()
        self.done += n
        self._done_cost[kind] += n if cost is None else cost
        self._seconds[kind] += now - self._last
        self._last = now
        if self._bar is not None:
            bar, task = self._bar
            bar.advance(task, n)
        elif self._logs and now - self._logged >= LOG_EVERY:
            self._logged = now
            self._write(self.line())

    def finish(self) -> None:
        """In a log that had progress lines, a last one: what was done, and in how long."""
        if self._logs and self._logged > self._start:
            total = f"/{self.total:,}" if self.total is not None else ""
            self._write(f"{self.description}: {self.done:,}{total} {self.unit} in {_clock(monotonic() - self._start)}")

    @staticmethod
    def _write(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def spent(self, kind: str = "") -> float:
        """The seconds spent on ``kind`` so far (until its last advance)."""
        return self._seconds[kind]

    def seconds_left(self) -> float | None:
        """The time the work left should take, or None before any has finished (or without a total)."""
        seen = [kind for kind, seconds in self._seconds.items() if seconds > 0 and self._done_cost[kind] > 0]
        if self.total is None or not seen:
            return None
        speed = {kind: self._done_cost[kind] / self._seconds[kind] for kind in seen}
        overall = sum(self._done_cost[kind] for kind in seen) / sum(self._seconds[kind] for kind in seen)
        left = sum(
            max(cost - self._done_cost[kind], 0.0) / speed.get(kind, overall) for kind, cost in self._costs.items()
        )
        return max(left - (monotonic() - self._last), 0.0)

    def line(self) -> str:
        """``description: done/total unit, rate/s, ETA h:mm:ss``."""
        rate = self.done / max(monotonic() - self._start, 1e-9)
        if self.total is None:
            return f"{self.description}: {self.done:,} {self.unit}, {rate:.1f}/s"
        left = self.seconds_left()
        eta = "?" if left is None else _clock(left)
        return f"{self.description}: {self.done:,}/{self.total:,} {self.unit}, {rate:.1f}/s, ETA {eta}"


class _Remaining(ProgressColumn):
    """The bar's ETA: its counter's (rich's own would divide the count left by the count's speed)."""

    def render(self, task: Task) -> Text:
        left = task.fields["counter"].seconds_left()
        return Text("-:--:--" if left is None else _clock(left), style="progress.remaining")


@contextmanager
def counting(
    description: str, total: int | None, unit: str = "items", costs: Mapping[str, float] | None = None
) -> Iterator[Counter]:
    """A Counter toward ``total`` (see Counter for ``costs``): a bar on a terminal, plain lines elsewhere."""
    global _showing
    counter = Counter(description, total, unit, costs)
    if not _console.is_terminal or _showing or _level == QUIET:
        yield counter
        counter.finish()
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit), _Remaining())
    with Progress(*columns, console=_console, transient=True) as bar:
        counter._bar = (bar, bar.add_task(description, total=total, counter=counter))
        _showing = True
        try:
            yield counter
        finally:
            _showing = False


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    with counting(description, total) as counter:
        for item in items:
            yield item
            counter.advance()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
