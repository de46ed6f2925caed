"""lm-evaluation-harness 0.4.13's own code reads what rueval writes: it finds the sample logs and the results
file of a run folder, reads each sample log's task from its name, and its W&B logger (offline) takes the
results and every sample line (tests/run/lm_eval_reads.py, in lm-eval's virtualenv: RUEVAL_LMEVAL_PYTHON,
default .venv-lmeval, which .ci/run makes)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support import LM_EVAL_PYTHON, lm_eval_missing, require

pytestmark = pytest.mark.slow  # starts lm-eval's interpreter


def test_lm_evals_own_code_finds_and_logs_rueval_sample_files(cli, tiny_gpt2_dir, tmp_path):
    missing = lm_eval_missing("lm_eval", "wandb")
    require(missing is None, missing or "")
    run = tmp_path / "run"
    args = ("-t", "parus,terra,multiq", "--limit", "4", "--log-samples", "--gen_kwargs", "max_gen_toks=8")
    result = cli("run", "-m", f"hf:{tiny_gpt2_dir}", *args, "-o", run)
    assert result.exit_code == 0, result.output
    env = {**os.environ, "WANDB_SILENT": "true", "WANDB_MODE": "offline", "PYTHONPATH": ""}
    command = [str(LM_EVAL_PYTHON), str(Path(__file__).with_name("lm_eval_reads.py")), str(run), str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["tasks"] == ["multiq", "parus", "terra"]
    assert found["results_files"] == [str(run / "results_lmeval.json")]
    configs = json.loads((run / "results_lmeval.json").read_text(encoding="utf-8"))["configs"]
    assert {t: configs[t]["output_type"] for t in found["tasks"]} == {
        "multiq": "generate_until",
        "parus": "multiple_choice",
        "terra": "multiple_choice",
    }
    assert list((tmp_path / "wandb").glob("offline-run-*"))  # the offline run W&B wrote
