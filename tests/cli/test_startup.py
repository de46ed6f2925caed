"""The command line starts light: its help and the classical baselines never import torch or
transformers (only a language model's run does), and the process ends without a final collection."""

import json
import subprocess
import sys

import pytest

# runs the command line as `rueval` does, then names the heavy libraries it imported
PROBE = """
import sys
from rueval.cli import main
sys.argv = ["rueval", *sys.argv[1:]]
try:
    main()
except SystemExit as stop:
    code = stop.code
import gc, json
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "httpx", "jinja2", "yaml"))
print(json.dumps({"code": code, "heavy": heavy, "frozen": gc.get_freeze_count() > 0}))
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
    started = heavy_imports(*given)
    assert started["code"] in (0, None) and started["heavy"] == []
    assert started["frozen"]  # what is left is freed with the process, not walked by the collector first
