"""`rueval run` commands in one process of vLLM's own virtualenv, run by tests/models/test_vllm_in_process.py
as a subprocess: `-m vllm:` starts its engine once per process, so the runs a test compares share one
engine (each `rueval` command would start its own). Usage: python vllm_runs.py COMMANDS.json, a list of
argument lists; stops at the first run that fails, with its output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from rueval.cli import app


def main() -> None:
    for args in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
        result = CliRunner().invoke(app, args)
        if result.exit_code != 0:
            sys.exit(f"rueval {' '.join(args)} failed ({result.exit_code}):\n{result.output}\n{result.exception!r}")


if __name__ == "__main__":  # vLLM starts its engine in spawned processes, which import this module again
    main()
