"""Running model-written code, for the tasks that score it by its results (MERA's ruHumanEval and
ruCodeEval). THIS IS NOT A SANDBOX: the code runs on the user's machine, as the user, with the
user's files in reach. It runs only with the user's consent (``--confirm-run-unsafe-code``, given
for one run: ``allowed``), and each program runs in a subprocess of its own

- in a fresh temporary directory, with a clean environment and Python's isolated mode;
- under a wall-clock timeout (the process and its children are killed) and an address-space
  limit (``resource.setrlimit(RLIMIT_AS)``, so an allocation past it fails);
- without network where ``unshare -n`` (or, unprivileged, ``unshare -rn``) can make the process a
  network namespace of its own; where neither can, the network is NOT blocked and the warning says so.

What a program is asked follows MERA's harness (benchmark_tasks/ruhumaneval/utils.py, MERA-Evaluation/
MERA at 9cf05b2): the program is executed (``EXEC_SECONDS`` for that), then its entry point is
called with each test's keyword arguments; a test's result is the text of what the call returned
(``str``), None where it returned None or raised; a program that fails to execute gives None for
every test, and one that is killed too.
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache

from rueval.core.errors import RuevalError

CONSENT_FLAG = "--confirm-run-unsafe-code"
EXEC_SECONDS = 3.0  # MERA's: the program's own execution (its time_limit)
TIMEOUT_SECONDS = EXEC_SECONDS + 1  # MERA's: the whole process (its join), then it is killed
MEMORY_BYTES = 2 * 2**30  # address space of one program's process
_ALLOWED: ContextVar[bool] = ContextVar("unsafe_code_allowed", default=False)

# Runs in the child: reads {program, entry_point, tests, nonce} on stdin, prints the nonce and the
# results as JSON on its last line. The program's own output goes to a buffer nobody reads.
_RUNNER = r"""
import ast, io, json, signal, sys
job = json.loads(sys.stdin.read())
out = sys.stdout
sys.stdout = sys.stderr = io.StringIO()
def _expired(signum, frame):
    raise TimeoutError("execution took too long")
tests = ast.literal_eval(job["tests"])
scope = {"__name__": "__candidate__"}
try:
    signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, job["exec_seconds"])
    exec(job["program"], scope)
    signal.setitimer(signal.ITIMER_REAL, 0)
    results = []
    for test in tests:
        try:
            value = scope[job["entry_point"]](**test)
            results.append(None if value is None else str(value))
        except BaseException:
            results.append(None)
except BaseException:
    results = [None] * len(tests)
out.write("\n" + job["nonce"] + json.dumps(results) + "\n")
out.flush()
"""


@dataclass(frozen=True)
class Program:
    """A program to run: its text, the function its tests call, and the tests (a Python literal: a
    list of keyword-argument objects, as MERA's records write them)."""

    text: str
    entry_point: str
    tests: str
    count: int  # how many tests the literal lists (the results of a program that fails)


@contextmanager
def allowed(consent: bool) -> Iterator[None]:
    """Within this block programs run if ``consent`` (the user's flag) is given."""
    token = _ALLOWED.set(consent)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def refusal(task: str) -> RuevalError:
    return RuevalError(f"{task} runs the model's code on this machine (not a sandbox): pass {CONSENT_FLAG} to allow it")


@cache
def network_block() -> tuple[str, ...]:
    """The command prefix that gives a process no network: ``unshare -n``, or ``unshare -rn``
    unprivileged; () where neither works here."""
    for prefix in (("unshare", "-n"), ("unshare", "-rn")):
        try:
            done = subprocess.run([*prefix, sys.executable, "-c", "pass"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return prefix
    return ()


def warning() -> str:
    """The one line a run that executes code prints."""
    network = "no network (unshare)" if network_block() else "the network is NOT blocked (no unshare here)"
    return (
        f"running model-written code on this machine, NOT in a sandbox: each program in a subprocess with a "
        f"{TIMEOUT_SECONDS:g} s timeout, a {MEMORY_BYTES // 2**20} MiB memory limit, {network}"
    )


def run_program(program: Program, task: str) -> list[str | None]:
    """Each test's result of ``program`` (MERA's: the text of what the entry point returned, None where
    it returned None or failed; None throughout when the program fails, is killed or exceeds a limit)."""
    if not _ALLOWED.get():
        raise refusal(task)
    nonce = secrets.token_hex(16)
    job = {"program": program.text, "entry_point": program.entry_point, "tests": program.tests, "nonce": nonce,
           "exec_seconds": EXEC_SECONDS}  # fmt: skip
    failed: list[str | None] = [None] * program.count
    with tempfile.TemporaryDirectory(prefix="rueval-code-") as folder:
        command = [*network_block(), sys.executable, "-I", "-c", _RUNNER]
        env = {"PATH": os.environ.get("PATH", ""), "HOME": folder, "TMPDIR": folder, "OMP_NUM_THREADS": "1"}
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=folder, env=env,
            preexec_fn=_limits, start_new_session=True, text=True, encoding="utf-8", errors="replace",
        )  # fmt: skip
        try:
            output, _ = process.communicate(json.dumps(job), timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            _kill(process)
            return failed
        finally:
            _kill(process)  # the program's own children, whatever became of it
    last = output.rstrip("\n").rpartition("\n")[2]
    if not last.startswith(nonce):
        return failed
    results = json.loads(last[len(nonce) :])
    return results if isinstance(results, list) and len(results) == program.count else failed


def run_programs(programs: Sequence[Program], task: str) -> list[list[str | None]]:
    """``run_program`` for each program in turn."""
    return [run_program(program, task) for program in programs]


def _limits() -> None:
    """In the child, before it starts: its address space limited."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _kill(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
