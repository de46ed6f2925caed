"""A run keeps its word: the data and tasks are checked before a model loads or a server is asked; a
refused run writes nothing; a run never takes over the folder of an unfinished run whose tasks its
--resume would drop; `--output_path FILE.json` writes lm-eval's results file beside FILE, as lm-eval
0.4.13 does, and never a folder named FILE.json."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import read_jsonl, write_jsonl

import rueval
from rueval.data.local import SAMPLES_DIR
from rueval.tasks import TASKS

UNREACHABLE_HUB_MODEL = "hf:rueval-tests/no-such-model"  # a hub id; HF_HUB_OFFLINE keeps the hub unasked


def duplicate_label(data: Path) -> str:
    """RCB's val split with a last line giving its label twice; returns the error naming it."""
    val = data / "RCB" / "val.jsonl"
    lines = val.read_text(encoding="utf-8").splitlines()
    with val.open("a", encoding="utf-8") as f:
        f.write('{"idx": 99, "premise": "a", "hypothesis": "b", "label": "neutral", "label": "entailment"}\n')
    return f"error: {val}:{len(lines) + 1}: field 'label': given twice in one object\n"


def without_train_labels(data: Path, folder: str) -> None:
    """The task's train split without answers: the majority baseline refuses it as it learns."""
    train = data / folder / "train.jsonl"
    write_jsonl(train, [{k: v for k, v in row.items() if k != "label"} for row in read_jsonl(train)])


def test_bad_data_is_reported_before_a_model_loads(data_dir, tmp_path):
    def run(*data: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "rueval", "run", "-m", UNREACHABLE_HUB_MODEL, "-t", "rcb", *data]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(rueval.__file__).parents[1])}
        return subprocess.run([*command, "-o", str(tmp_path / "out")], env=env, capture_output=True, text=True)

    loaded = run()  # good data: the model is opened, and cannot be
    assert loaded.returncode == 2 and f"error: {UNREACHABLE_HUB_MODEL}: cannot load the model" in loaded.stderr
    said = duplicate_label(data_dir)
    refused = run("--data", str(data_dir))
    assert (refused.returncode, refused.stderr) == (2, said)  # the data's error, and the model never opened
    assert "loading hf:" not in refused.stdout + refused.stderr
    assert not (tmp_path / "out").exists()


def test_bad_data_is_reported_before_a_server_is_asked(cli, data_dir, tmp_path):
    server = ("-m", "openai:some-model", "--base-url", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    asked = cli("run", *server, "-t", "rcb", "-o", tmp_path / "out")
    assert asked.exit_code == 2 and "cannot reach an OpenAI-compatible server at http://127.0.0.1:9/v1" in asked.stderr
    said = duplicate_label(data_dir)
    refused = cli("run", *server, "-t", "rcb", "--data", data_dir, "-o", tmp_path / "out")
    assert (refused.exit_code, refused.stderr) == (2, said)


def test_a_refused_run_writes_nothing_and_the_corrected_run_is_not_refused(cli, data_dir, tmp_path):
    out = tmp_path / "out"
    without_train_labels(data_dir, "RCB")
    refused = cli("run", "-m", "majority", "-t", "rcb", "--data", data_dir, "-o", out)
    assert refused.exit_code == 2
    assert refused.stderr == "error: rcb: the majority baseline needs labelled train examples, and the data has none\n"
    assert not out.exists()
    corrected = cli("run", "-m", "majority", "-t", "rcb", "-o", out)  # the bundled samples, with answers
    assert corrected.exit_code == 0, corrected.output


def test_a_refused_rerun_leaves_the_runs_folder_as_it_was(cli, data_dir, tmp_path):
    out = tmp_path / "out"
    without_train_labels(data_dir, "PARus")
    assert cli("run", "-m", "majority", "-t", "rcb", "--data", data_dir, "-o", out).exit_code == 0
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    refused = cli("run", "-m", "majority", "-t", "rcb,parus", "--data", data_dir, "-o", out)
    assert refused.exit_code == 2 and "parus: the majority baseline needs labelled train examples" in refused.stderr
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before


@pytest.fixture
def unfinished(cli, data_dir, tmp_path) -> tuple[Path, Path]:
    """A `-t all` run stopped at winograd, the first TAPE task (its train split has no answers): its nine
    RSG tasks are finished, run.json lists every task. Returns (the run's folder, its data)."""
    out = tmp_path / "out"
    without_train_labels(data_dir, "winograd")
    stopped = cli("run", "-m", "majority", "-t", "all", "--data", data_dir, "-o", out)
    assert stopped.exit_code == 2 and "winograd: the majority baseline needs labelled train" in stopped.stderr
    recorded = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert len(recorded["tasks"]) == len(TASKS) and len(recorded["files"]) == 9  # finished work is kept
    return out, data_dir


def test_a_run_of_other_tasks_into_an_unfinished_runs_folder_is_refused(cli, unfinished):
    out, data = unfinished
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    refused = cli("run", "-m", "majority", "-t", "rsg", "--data", data, "-o", out)
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"error: {out}: holds an unfinished run whose {len(TASKS) - 9} other task(s) this run would drop (winograd, "
        f"ru_worldtree, ru_openbook, multiq, chegeka, ...); continue it with rueval run --resume -o {out}, "
        "give a new -o, or --force to run these tasks in its place\n"
    )
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    shutil.copy(SAMPLES_DIR / "winograd" / "train.jsonl", data / "winograd" / "train.jsonl")
    resumed = cli("run", "--resume", "-o", out)  # the data mended: --resume loses no task
    assert resumed.exit_code == 0, resumed.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert len(results["tasks"]) + len(results["predicted"]) == len(TASKS) and len(results["reused"]) == 9


def test_force_runs_other_tasks_in_an_unfinished_runs_place_and_says_so(cli, unfinished):
    out, data = unfinished
    forced = cli("run", "-m", "majority", "-t", "rsg", "--data", data, "-o", out, "--force")
    assert forced.exit_code == 0, forced.output
    assert f"note: dropped the unfinished task(s) of the earlier run in {out}: winograd, " in forced.stdout
    assert len(json.loads((out / "run.json").read_text(encoding="utf-8"))["tasks"]) == 9


def test_a_run_that_adds_tasks_to_an_unfinished_run_goes_on(cli, unfinished):
    out, data = unfinished
    shutil.copy(SAMPLES_DIR / "winograd" / "train.jsonl", data / "winograd" / "train.jsonl")
    result = cli("run", "-m", "majority", "-t", "all", "--data", data, "-o", out)  # drops none of its tasks
    assert result.exit_code == 0, result.output
    assert len(json.loads((out / "results.json").read_text(encoding="utf-8"))["reused"]) == 9


LM_EVAL_DATE_ID = r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+"  # lm-eval's datetime.now().isoformat(), ':' -> '-'


def test_output_path_ending_in_json_writes_lm_evals_results_file_beside_it(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "--output_path", "res/x.json", "--log-samples")
    assert result.exit_code == 0, result.output
    assert not Path("res/x.json").exists()
    (written,) = Path("res").glob("x_*.json")
    assert re.fullmatch(rf"x_{LM_EVAL_DATE_ID}\.json", written.name)
    run_dir = Path("res/x")  # the run's own files: FILE without .json
    assert json.loads(written.read_text(encoding="utf-8")) == json.loads((run_dir / "results_lmeval.json").read_bytes())
    assert {p.name for p in run_dir.iterdir()} == {
        "run.json", "results.json", "results_lmeval.json", "predictions", "tasks", "samples"
    }  # fmt: skip
    assert f"note: lm-eval's results file: {written}" in result.stdout
    assert "results: res/x/results.json" in result.stdout
    resumed = cli("run", "--resume", "--output_path", "res/x.json")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((run_dir / "results.json").read_bytes())["reused"] == ["rcb", "parus"]
    assert len(list(Path("res").glob("x_*.json"))) == 2  # each run writes its own, as lm-eval's do


def test_the_python_api_takes_the_json_file_form_too(tmp_path):
    evaluation = rueval.evaluate("majority", tasks="rcb", out=tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists() and (tmp_path / "x" / "run.json").is_file()
    assert len(evaluation.predictions["rcb"]) == evaluation.tasks["rcb"].n
    assert len(list(tmp_path.glob("x_*.json"))) == 1
