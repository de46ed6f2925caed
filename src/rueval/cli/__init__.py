"""The `rueval` command line: one thin function per command (cli/evaluate.py: run, perturb, submit;
cli/inspect.py: the commands that look at tasks, data and runs; cli/serve.py: the leaderboard service),
options in cli/options.py."""

from __future__ import annotations

from rueval.cli import evaluate, inspect, serve  # noqa: F401 - importing them registers their commands
from rueval.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
