"""The memory this process has used (for the industrial figures and the training reports), and large
libraries' first import kept out of the cyclic collector's way.

In a process that ends with its command (the command line calls ``freeze_imports``), the first import of
large libraries (``import_libraries``) runs with the cyclic collector paused, and what it built is then
frozen out of the collector's reach. torch, transformers, datasets and lm-eval build some 700,000 objects
that live as long as the process; the collector walked them again and again as they were made, a third of
a second of a gsm8k task-file run. Reference counting still frees what it can; only cycles among the
frozen objects (some 10,000 objects those imports leave) are never freed.
"""

from __future__ import annotations

import gc
import resource
import sys

_FROZEN_IMPORTS = {"on": False}  # set by the command line's process


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


def freeze_imports() -> None:
    """This process ends with its command: large libraries' first imports are frozen (import_libraries)."""
    _FROZEN_IMPORTS["on"] = True


def import_libraries(*names: str) -> None:
    """The modules imported in order (an ImportError as import raises it); the first time, in a process that
    ends with its command, without the cyclic collector walking what they build."""
    if not _FROZEN_IMPORTS["on"] or not gc.isenabled() or all(name in sys.modules for name in names):
        _import(names)
        return
    gc.disable()
    try:
        _import(names)
    finally:
        gc.freeze()
        gc.enable()


def _import(names: tuple[str, ...]) -> None:
    for name in names:
        __import__(name)  # the import statement's own way in, which python -X importtime reports
