"""The sweep's harness, shared by benchmarks/hostile_sweep.py and the cases: what a case is (``Case``),
the folder it prepares (``CaseDir``), what several cases share (``Shared``), the commands it runs
(``rueval``, ``python``) and how they are run and measured (``run_command``, ``Outcome``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
ERROR, OK, EITHER = "error", "ok", "either"


@dataclass
class Outcome:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def error_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


class Skip(Exception):
    """A case that cannot be tried on this machine (it needs root, a tool, ...)."""


@dataclass
class CaseDir:
    """What a case prepares in its own folder: the command's environment and the checks of its outcome."""

    path: Path
    shared: Shared
    env: dict[str, str] = field(default_factory=dict)
    checks: list[Callable[[Outcome], str | None]] = field(default_factory=list)
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    memory_mb: float | None = None  # a bound known once the case's files are made (else the case's own)

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def check(self, check: Callable[[Outcome], str | None]) -> None:
        """``check(outcome)``: None when right, else what is wrong."""
        self.checks.append(check)

    def nothing_written(self, *paths: Path) -> None:
        def check(outcome: Outcome) -> str | None:
            if outcome.returncode != 2:  # a result: what it wrote is the case's to check
                return None
            made = [str(p) for p in paths if p.exists() and (p.is_file() or any(p.iterdir()))]
            return f"written although refused: {', '.join(made)}" if made else None

        self.check(check)

    def samples(self, name: str = "data") -> Path:
        """A writable copy of the bundled samples."""
        from rueval.data.local import SAMPLES_DIR

        target = self.path / name
        shutil.copytree(SAMPLES_DIR, target)
        return target

    def rueval(self, *args, env: dict[str, str] | None = None, timeout: float = 600) -> Outcome:
        """A command run now, while preparing (a run to resume, a cache to fill); it must succeed."""
        outcome = run_command(rueval(*args), self.path, {**self.env, **(env or {})}, timeout)
        if outcome.returncode != 0:
            raise RuntimeError(f"preparing: rueval {' '.join(map(str, args))} failed:\n{outcome.output[-2000:]}")
        return outcome


@dataclass
class Shared:
    """What several cases use, made once when first asked for."""

    root: Path
    _tiny: Path | None = None
    _server: object = None

    def tiny(self) -> Path:
        """`rueval make-tiny-model`'s model, its tokenizer given the tests' chat template (openai-chat:)."""
        if self._tiny is None:
            target = self.root / "tiny"
            outcome = run_command(rueval("make-tiny-model", target), self.root, {}, 600)
            assert outcome.returncode == 0, outcome.output
            sys.path.insert(0, str(TESTS))
            from support import TEMPLATE

            config_file = target / "tokenizer_config.json"
            config = json.loads(config_file.read_text(encoding="utf-8"))
            config_file.write_text(json.dumps({**config, "chat_template": TEMPLATE}), encoding="utf-8")
            self._tiny = target
        return self._tiny

    def tiny_bert(self) -> Path:
        """A small random BERT (an encoder to fine-tune), as the tests build it."""
        target = self.root / "tiny-bert"
        if not target.exists():
            code = "from pathlib import Path; from rueval.models.backends.tiny import build_tiny_bert; "
            code += f"build_tiny_bert(Path({str(target)!r}))"
            outcome = run_command([sys.executable, "-c", code], self.root, {}, 600)
            assert outcome.returncode == 0, outcome.output
        return target

    def samples_file(self, name: str) -> Path:
        from rueval.data.local import SAMPLES_DIR

        return SAMPLES_DIR / name

    def gold(self) -> Path:
        """A leaderboard's gold from the bundled samples (tests/serve/board_support.write_gold)."""
        target = self.root / "gold"
        if not target.exists():
            sys.path.insert(0, str(TESTS / "serve"))
            from board_support import write_gold

            write_gold(target)
        return target

    def server(self, **faults):
        """The fault-injection server on the tiny model, its switches set to ``faults`` (the rest reset)."""
        if self._server is None:
            sys.path.insert(0, str(TESTS / "models"))
            from fault_server import FaultServer

            self._server = FaultServer(self.tiny()).__enter__()
        server = self._server
        defaults = {"fault_logprob": None, "fault_model": None, "logprobs_supported": True, "delay": 0.0}
        defaults |= {"fail_next": 0, "drop_next": 0, "chat_logprobs_supported": True}
        for name, value in (defaults | faults).items():
            setattr(server, name, value)
        return server

    def close(self) -> None:
        if self._server is not None:
            self._server.__exit__(None, None, None)


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    expect: str  # ERROR, OK or EITHER
    prepare: Callable[[CaseDir], list[str]]  # makes the case's files, returns its command
    said: tuple[str, ...] = ()  # words a clear error has
    timeout: float = 120
    memory_mb: float | None = None
    slow: bool = False
    serves: bool = False  # a server: still running at the timeout means it took the command line


def rueval(*args) -> list[str]:
    return [sys.executable, "-m", "rueval", *map(str, args)]


API_PRELUDE = """
import math, sys
from pathlib import Path
import rueval
from rueval.core.errors import RuevalError
try:
{body}
except RuevalError as e:
    print(f"error: {{e}}", file=sys.stderr)
    sys.exit(2)
"""


def python(code: str) -> list[str]:
    """A snippet run as the API's user runs it: a RuevalError is the API's clear error (shown as
    ``error: ...``, exit 2); anything else that escapes is a traceback."""
    body = "\n".join("    " + line for line in code.strip().splitlines())
    return [sys.executable, "-c", API_PRELUDE.format(body=body)]


# Started by a small process of its own: a child forked from this one (which holds torch and the fault
# server's model) would count this process's peak as its own (the peak RSS survives exec).
MEASURED = (
    "import os, subprocess, sys; child = subprocess.Popen(sys.argv[2:]); _, status, usage = os.wait4(child.pid, 0); "
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss)); sys.exit(os.waitstatus_to_exitcode(status))"
)


def run_command(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Outcome:
    """``argv`` in its own process group, its peak resident set measured; killed at ``timeout``."""
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", **env}
    environment.setdefault("RUEVAL_CACHE_DIR", str(cwd / "cache"))
    out, err, peak = cwd / "stdout.txt", cwd / "stderr.txt", cwd / "peak_kb.txt"  # kept for --keep
    peak.unlink(missing_ok=True)
    start = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", MEASURED, str(peak), *argv], cwd=cwd, env=environment, stdout=stdout,
            stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    seconds = time.monotonic() - start
    text = (out.read_text(errors="replace"), err.read_text(errors="replace"))
    peak_mb = int(peak.read_text()) / 1024 if peak.is_file() else 0.0
    return Outcome(code, *text, seconds, peak_mb)
