"""Data parallelism: a run launched as two CPU processes (gloo, on 127.0.0.1, as accelerate launch
and torchrun start them) splits its requests and writes what the one-process run writes."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support import read_samples

from rueval.models.base import Generation, Loglikelihood
from rueval.models.distributed import shares

pytestmark = pytest.mark.slow  # launches processes

# One process of a run: the CLI, with generations capped at a few tokens (a random model never stops
# by itself) and, for the failure tests, process 2 made to fail inside the model.
PROCESS = """
import os, sys
from rueval.models.backends.hf import HFCausalLM
from rueval.tasks.prompts import PROMPTS

PROMPTS["multiq"].max_new_tokens = (4, 4)
failure = sys.argv[1]
if os.environ.get("RANK") == "1" and failure != "none":
    def fail(self, requests, on_done=None):
        if failure == "dies":
            os._exit(9)
        raise RuntimeError("out of memory on this device")
    HFCausalLM.loglikelihood = fail
sys.argv = ["rueval", *sys.argv[2:]]
from rueval.cli import main
main()
"""
# A process that loads the model as a run does, then ends its part in the launch: exit 3 if the
# process group outlives its destruction (its gloo threads then race the interpreter's teardown).
GROUP_FREED = """
import sys, weakref
from torch.distributed.distributed_c10d import _get_default_group
from rueval.models.distributed import world
from rueval.models.backends.hf import HFCausalLM

launch = world()
group = weakref.ref(_get_default_group())
HFCausalLM(sys.argv[sys.argv.index("-m") + 1].removeprefix("hf:"), device=launch.device)
launch.close()
sys.exit(3 if group() is not None else 0)
"""
ARGS = ["run", "-t", "parus,multiq", "--limit", "4", "--shots", "0,1", "--episodes", "2"]
TIMINGS = {"created", "wall_time_s", "seconds", "examples_per_s", "latency_ms_per_example", "peak_rss_mb"}


def launch(
    tmp: Path,
    tiny: Path,
    out: Path,
    processes: int,
    failure: str = "none",
    accelerate: bool = False,
    program: str = PROCESS,
) -> list[tuple[int, str]]:
    """Run the processes of one run (``program``) to their end: each one's exit code and stderr. With ``accelerate``
    `accelerate launch` starts them (its multi-GPU launcher, which on a machine without GPUs starts
    CPU processes over gloo); else they are started here with the variables torchrun and accelerate
    launch set (WORLD_SIZE, RANK, MASTER_ADDR, MASTER_PORT)."""
    tmp.mkdir(exist_ok=True)
    script = tmp / "process.py"
    script.write_text(program, encoding="utf-8")
    command = [str(script), failure, *ARGS, "-m", f"hf:{tiny}", "--log-samples", "-o", str(out)]
    env = {**os.environ, "RUEVAL_CACHE_DIR": str(tmp / "cache"), "RUEVAL_DISTRIBUTED_TIMEOUT": "60"}
    if accelerate:
        options = ["--multi_gpu", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
        started = [
            ([sys.executable, "-m", "accelerate.commands.launch", *options, f"--num_processes={processes}"], env)
        ]
    elif processes == 1:
        started = [([sys.executable], env)]
    else:
        with socket.socket() as s:  # a free port on localhost for the processes to meet
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        where = {"WORLD_SIZE": str(processes), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        started = [([sys.executable], {**env, **where, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(processes)]
    running = []
    for i, (launcher, variables) in enumerate(started):
        stderr = (tmp / f"stderr{i}").open("w")
        running.append(
            (subprocess.Popen([*launcher, *command], env=variables, stdout=subprocess.DEVNULL, stderr=stderr), stderr)
        )
    try:
        ended = [process.wait(timeout=300) for process, _ in running]
    finally:
        for process, stderr in running:
            process.kill()  # only if still running: a hung run fails the test instead of outliving it
            stderr.close()
    return [(code, (tmp / f"stderr{i}").read_text()) for i, code in enumerate(ended)]


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS and k != "notes"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def cached_rows(cache: Path) -> int:
    with sqlite3.connect(cache / "requests" / "requests.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def test_two_processes_write_what_one_process_writes(tmp_path, tiny_gpt2_dir):
    one, two = tmp_path / "one", tmp_path / "two"
    ((code, stderr),) = launch(tmp_path / "alone", tiny_gpt2_dir, one, 1)
    assert code == 0, stderr
    ((code, stderr),) = launch(tmp_path / "launched", tiny_gpt2_dir, two, 2, accelerate=True)
    assert code == 0, stderr

    alone, shared = (json.loads((out / "results.json").read_text()) for out in (one, two))
    assert without_timings(shared) == without_timings(alone)
    assert shared["tasks"]["multiq"]["shots"]["1"]["episodes"][1]  # k=1 x 2 episodes of a sampled generation task
    for task in ("parus", "multiq"):
        assert (two / "predictions" / f"{task}.jsonl").read_text() == (
            one / "predictions" / f"{task}.jsonl"
        ).read_text()
        assert [s["prediction"] for s in read_samples(two, task)] == [s["prediction"] for s in read_samples(one, task)]

    # each process computed its own share; together, every request once, all committed to the one cache
    note = next(n for n in shared["notes"] if "data parallel" in n)
    first, second = map(int, re.search(r"computed (\d+) \+ (\d+) requests", note).groups())
    total = sum(result["requests_computed"] for result in alone["tasks"].values())
    assert first > 0 and second > 0 and first + second == total == cached_rows(tmp_path / "launched" / "cache")


def test_a_failing_process_stops_the_run_with_one_line(tmp_path, tiny_gpt2_dir):
    (main_code, main_err), (worker_code, _) = launch(tmp_path, tiny_gpt2_dir, tmp_path / "out", 2, "raises")
    errors = [line for line in main_err.splitlines() if line.startswith("error:")]
    assert main_code == 2 and worker_code != 0
    assert errors == ["error: process 2 of 2 failed: RuntimeError: out of memory on this device"]
    assert "Traceback" not in main_err and not (tmp_path / "out" / "results.json").exists()


def test_a_process_that_dies_ends_the_run_instead_of_hanging(tmp_path, tiny_gpt2_dir):
    (main_code, main_err), (worker_code, _) = launch(tmp_path, tiny_gpt2_dir, tmp_path / "out", 2, "dies")
    errors = [line for line in main_err.splitlines() if line.startswith("error:")]
    assert worker_code == 9 and main_code == 2 and len(errors) == 1
    assert "process 1 of 2: gathering the results failed, another process died" in errors[0]


def test_the_process_group_is_freed_when_a_process_leaves_the_launch(tmp_path, tiny_gpt2_dir):
    # Once, transformers' imports kept the group alive: a process then ended with SIGABRT now and then.
    ended = launch(tmp_path, tiny_gpt2_dir, tmp_path / "out", 2, program=GROUP_FREED)
    assert [code for code, _ in ended] == [0, 0], ended


def test_shares_are_even_runs_that_keep_episodes_and_options_together():
    # three episodes (demonstrations d0..d2) of ten items, each with two options, and four generations
    requests = [
        Loglikelihood(f"demonstrations d{episode} question {item:02}", f" option {option}")
        for episode in range(3)
        for item in range(10)
        for option in range(2)
    ] + [Generation(f"prompt {i}", 4) for i in range(4)]
    for n in (1, 2, 3, 4):
        parts = shares(requests + requests[:5], n)  # repeats are computed once
        assert sorted(map(repr, (r for part in parts for r in part))) == sorted(map(repr, requests))
        assert max(map(len, parts)) - min(map(len, parts)) <= len(requests) / (4 * n) + 1
        for part in parts:  # an item's options stay together; the costly generations are spread evenly
            contexts = [r.context for r in part if isinstance(r, Loglikelihood)]
            assert all(contexts.count(c) == 2 for c in contexts)
            assert sum(isinstance(r, Generation) for r in part) in (4 // n, -(-4 // n))
    by_episode = [
        {r.context.split()[1] for r in part if isinstance(r, Loglikelihood)} for part in shares(requests[:60], 3)
    ]
    assert by_episode == [{"d0"}, {"d1"}, {"d2"}]  # cut between episodes when that keeps the shares near even


def test_a_plain_run_knows_of_no_launch_and_never_imports_accelerate():
    code = (
        "import sys; from rueval.run.pipeline import run; from rueval.models.distributed import world; "
        "assert world() is None and 'accelerate' not in sys.modules and 'torch' not in sys.modules"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")}
    assert subprocess.run([sys.executable, "-c", code], check=False, env=env).returncode == 0


def test_the_main_process_alone_decides_about_the_run_directory(tmp_path, tiny_gpt2_dir, cli):
    out = tmp_path / "out"
    assert cli("run", "-m", "majority", "-t", "parus", "-o", out).exit_code == 0  # another run's results
    (main_code, main_err), (worker_code, worker_err) = launch(tmp_path, tiny_gpt2_dir, out, 2)
    errors = [line for line in (main_err + worker_err).splitlines() if line.startswith("error:")]
    assert (main_code, worker_code) == (2, 2) and len(errors) == 1 and "holds the results of another run" in errors[0]
    assert json.loads((out / "results.json").read_text())["model"] == "majority"  # left as it was
