"""The `rueval` command line: one thin function per command (cli/evaluate.py: run, perturb, submit;
cli/inspect.py: the commands that look at tasks, data and runs; cli/serve.py: the leaderboard service),
options in cli/options.py."""

from __future__ import annotations

import gc

from rueval.cli import evaluate, inspect, serve  # noqa: F401 - importing them registers their commands
from rueval.cli.app import app

# Collections of the youngest objects, per this many more allocations than frees; older generations
# after this many of the younger one's. Python's defaults (700, 10, 10) make a process that imports
# torch and transformers walk their half-million long-lived objects again and again (over a second);
# these leave a full collection for every ten million objects that outlive their creation.
GC_THRESHOLDS = (50_000, 20, 10)


def main() -> None:
    """The command line as a process of its own: the collector runs rarely, and not at the end (what
    is left is freed with the process)."""
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        app()
    finally:
        gc.freeze()


__all__ = ["app", "main"]
