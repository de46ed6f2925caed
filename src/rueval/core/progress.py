"""Progress on stderr: a bar with the count and an ETA on a terminal; in logs and pipes, a plain
line every few seconds with the count, the rate and the ETA (long runs on clusters are watched
through their log files). Long steps say what they are doing (``step``), and the command line sets
once how much of this is shown (``set_level``: --quiet, --verbose)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from time import monotonic
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

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
    """Work done toward a total; ``advance`` as items finish."""

    def __init__(self, description: str, total: int | None, unit: str):
        self.description, self.total, self.unit = description, total, unit
        self.done = 0
        self._start = self._logged = monotonic()
        self._bar: tuple[Progress, TaskID] | None = None
        self._logs = _level > QUIET and not _console.is_terminal  # asked once: rich looks at the environment

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            bar, task = self._bar
            bar.advance(task, n)
        elif self._logs and monotonic() - self._logged >= LOG_EVERY:
            self._logged = monotonic()
            sys.stderr.write(self.line() + "\n")
            sys.stderr.flush()

    def line(self) -> str:
        """``description: done/total unit, rate/s, ETA h:mm:ss``."""
        rate = self.done / max(monotonic() - self._start, 1e-9)
        if self.total is None:
            return f"{self.description}: {self.done} {self.unit}, {rate:.1f}/s"
        eta = _clock((self.total - self.done) / rate) if rate > 0 else "?"
        return f"{self.description}: {self.done}/{self.total} {self.unit}, {rate:.1f}/s, ETA {eta}"


@contextmanager
def counting(description: str, total: int | None, unit: str = "items") -> Iterator[Counter]:
    global _showing
    counter = Counter(description, total, unit)
    if not _console.is_terminal or _showing or _level == QUIET:
        yield counter
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit))
    with Progress(*columns, TimeRemainingColumn(), console=_console, transient=True) as bar:
        counter._bar = (bar, bar.add_task(description, total=total))
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
