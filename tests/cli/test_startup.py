"""The command line as a process: its help and the classical baselines never import torch, transformers,
datasets, lm-eval, matplotlib nor the service's database (only a run that needs them does); freed memory is
kept for reuse; the process ends with its exit handlers run and its output flushed, without tearing its
objects down one by one."""

import json
import subprocess
import sys

import pytest

# runs the command line as `rueval` does and, where it ends, names the heavy libraries it imported
PROBE = """
import json, os, sys
from rueval.cli import main
exit_now = os._exit

def report(status):
    named = ("torch", "transformers", "httpx", "jinja2", "yaml", "datasets", "lm_eval", "matplotlib", "sqlalchemy")
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in named)
    print(json.dumps({"code": status, "heavy": heavy}), flush=True)
    exit_now(status)

os._exit = report
sys.argv = ["rueval", *sys.argv[1:]]
main()
"""


def heavy_imports(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("run", "--help"),
        ("run", "-m", "majority", "-t", "parus,terra", "--limit", "5", "-q"),
        ("run", "-m", "heuristic", "-t", "terra", "--limit", "5", "-q"),
        ("run", "-m", "tfidf", "-t", "terra", "--limit", "5", "-q"),
    ],
)
def test_help_and_classical_baselines_import_no_torch_nor_transformers(args, tmp_path):
    given = [*args, "-o", str(tmp_path / "out")] if args[0] == "run" and "--help" not in args else list(args)
    started = heavy_imports(*given)  # the JSON line is there only if the process ended through end_process
    assert started == {"code": 0, "heavy": []}


def test_a_refused_command_ends_with_its_code_and_its_message(tmp_path):
    ended = subprocess.run(
        [sys.executable, "-c", PROBE, "run", "-m", "majority", "-t", "no-such-task", "-o", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert ended.returncode == json.loads(ended.stdout.strip().splitlines()[-1])["code"] == 2
    assert "no-such-task" in ended.stderr and len(ended.stderr.strip().splitlines()) == 1


# end_process(code) in a process that has buffered output, an exit handler, and maybe a thread still working
ENDING = """
import atexit, sys, threading, time
from pathlib import Path
from rueval.cli import end_process
out, code, thread = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
atexit.register(lambda: (out / "handler").write_text("ran"))
if thread == "working":
    threading.Thread(target=lambda: (time.sleep(0.3), (out / "thread").write_text("done"))).start()
sys.stdout.write("unflushed")
end_process(int(code) if code.isdigit() else code)
"""


@pytest.mark.parametrize(("code", "status", "stderr"), [("0", 0, ""), ("3", 3, ""), ("a message", 1, "a message\n")])
def test_end_process_exits_as_python_would(tmp_path, code, status, stderr):
    ended = subprocess.run([sys.executable, "-c", ENDING, str(tmp_path), code, "none"], capture_output=True, text=True)
    assert (ended.returncode, ended.stdout, ended.stderr) == (status, "unflushed", stderr)
    assert (tmp_path / "handler").read_text() == "ran"


def test_end_process_waits_for_a_thread_still_working(tmp_path):
    ended = subprocess.run(
        [sys.executable, "-c", ENDING, str(tmp_path), "0", "working"], capture_output=True, text=True
    )
    assert ended.returncode == 0 and ended.stdout == "unflushed"
    assert (tmp_path / "thread").read_text() == "done" and (tmp_path / "handler").read_text() == "ran"


# resident memory (MiB) after a 24 MiB block is written and freed, with or without set_up_process()
FREED = """
import sys
from rueval.cli import set_up_process
if sys.argv[1] == "set up":
    set_up_process()

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

before = resident()
block = bytes(24 << 20) + b"x"  # written, so its pages are resident
del block
print(resident() - before)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc settings: Linux only")
def test_set_up_process_keeps_freed_blocks_for_reuse():
    def kept(mode: str) -> float:
        out = subprocess.run([sys.executable, "-c", FREED, mode], capture_output=True, text=True, check=True).stdout
        return float(out)

    assert kept("default") < 4  # glibc gives a block this large back to the system when it is freed
    assert kept("set up") > 20  # kept in the heap for the next one
