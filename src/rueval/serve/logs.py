"""The service's log (the server's and its workers' standard error), kept small under a flood: lines
of one kind (the same logger, level and message template) are written at most ``burst`` times in
``window_s``, and a traceback of one kind once; the first line of that kind written after some were
held back says how many."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

FORMAT = "%(asctime)s %(name)s: %(message)s"
KINDS_KEPT = 1000  # kinds remembered, the least recently seen forgotten first


@dataclass
class _Window:
    start: float
    written: int = 0
    traced: int = 0
    held: int = 0


class RepeatFilter(logging.Filter):
    def __init__(self, window_s: float = 10.0, burst: int = 50):
        super().__init__()
        self.window_s, self.burst = window_s, burst
        self._windows: OrderedDict[tuple[Any, ...], _Window] = OrderedDict()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, str(record.msg))
        now = time.monotonic()
        with self._lock:
            window = self._windows.pop(kind, None)
            held = 0
            if window is None or now - window.start >= self.window_s:
                held = window.held if window else 0
                window = _Window(now)
            self._windows[kind] = window
            if len(self._windows) > KINDS_KEPT:
                self._windows.popitem(last=False)
            if window.written >= self.burst or (record.exc_info and window.traced >= 1):
                window.held += 1
                return False
            window.written += 1
            window.traced += bool(record.exc_info)
        if held:
            record.msg = f"{record.msg} [{held} more like this in the {self.window_s:g} s before were not logged]"
        return True


def configure_logging() -> None:
    """The service's processes log at INFO to standard error, each handler behind a RepeatFilter of its own (a
    shared one would count a line written by one handler against the next, which would then hold it back)."""
    logging.basicConfig(level=logging.INFO, format=FORMAT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RepeatFilter())
