"""The `rueval` command line: one thin function per command (cli/evaluate.py: run, perturb, submit;
cli/inspect.py: the commands that look at tasks, data and runs; cli/serve.py: the leaderboard service),
options in cli/option_types.py."""

from __future__ import annotations

import atexit
import ctypes
import gc
import os
import sys
import threading
from typing import NoReturn

from rueval.cli import contamination, evaluate, inspect, serve  # noqa: F401 - importing them registers their commands
from rueval.cli.app import app
from rueval.core.memory import freeze_imports

# Collections of the youngest objects, per this many more allocations than frees; older generations
# after this many of the younger one's. Python's defaults (700, 10, 10) make a process that imports
# torch and transformers walk their half-million long-lived objects again and again (over a second);
# these leave a full collection for every ten million objects that outlive their creation.
GC_THRESHOLDS = (50_000, 20, 10)

# glibc's malloc gives freed blocks back to the system, and the next forward pass that asks for as
# much faults them in again, page by page, zeroed (a 4-shot run on a CPU spent 4 s of system time so).
# With these, blocks of up to 32 MiB (glibc's largest setting) come from the heap and up to 1 GiB of
# freed heap is kept: 1 s. (mallopt's parameter numbers: M_MMAP_THRESHOLD -3, M_TRIM_THRESHOLD -1.)
MALLOC_SETTINGS = ((-3, 32 << 20), (-1, 1 << 30))


def main() -> NoReturn:
    """The command line as a process of its own (set_up_process, end_process)."""
    set_up_process()
    try:
        app()
    except SystemExit as stop:
        end_process(stop.code)
    end_process(0)


def set_up_process() -> None:
    """The collector runs rarely (GC_THRESHOLDS) and never walks what large libraries' imports built
    (freeze_imports); freed memory is kept for reuse (MALLOC_SETTINGS, where the C library is glibc)."""
    gc.set_threshold(*GC_THRESHOLDS)
    freeze_imports()
    if sys.platform == "linux":
        libc = ctypes.CDLL(None)
        if hasattr(libc, "gnu_get_libc_version"):  # the parameter numbers are glibc's
            for parameter, value in MALLOC_SETTINGS:
                libc.mallopt(parameter, value)


def end_process(code: object) -> NoReturn:
    """Exit with ``code`` (as SystemExit takes it) as Python would, less the teardown of every object left,
    which after torch and transformers takes a sixth of a second: the exit handlers run and the output is
    flushed as at a normal exit. While a thread that is not a daemon still runs, the exit is Python's own."""
    if any(not thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread()):
        gc.freeze()  # what is left is freed with the process, not walked by the collector first
        raise SystemExit(code)
    if code is None or isinstance(code, int):
        status = code or 0
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()  # what a normal exit runs (CPython's own, present since Python 3.0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`rueval ... | head`) or a closed stream
            pass
    os._exit(status)


__all__ = ["app", "end_process", "main", "set_up_process"]
