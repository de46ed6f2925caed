"""`rueval export` ships only what the run computed: its predictions as the run wrote them (run.json's
checksums), from the data as the run read it (tasks/<task>.json's checksum). An edited file is refused
in one line naming it and what to rerun; a prediction that is none of the task's answers too."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
from mera_files import seven_tasks, write_snapshot
from support import read_jsonl, write_jsonl

TASKS = "parus,rcb,rwsd,ru_worldtree,multiq"


@pytest.fixture
def mera_run(cli, tmp_path) -> tuple[Path, Path]:
    """A majority run that predicted MERA's test splits (MERA-evaluation/MERA's layout, --predict-only):
    returns (the run's folder, MERA's data folder)."""
    data = write_snapshot(tmp_path / "mera", seven_tasks())
    result = cli("run", "-m", "majority", "-t", TASKS, "--data", data, "--predict-only", "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    return tmp_path / "run", data


def export(cli, run: Path):
    return cli("export", "--format", "mera", run, "-o", run.parent / "submission.zip")


def exported_parus(run: Path) -> list[str]:
    with zipfile.ZipFile(run.parent / "submission.zip") as archive:
        return [entry["outputs"] for entry in json.loads(archive.read("PARus.json"))["data"]["test"]]


def edit_prediction(run: Path, task: str, value) -> Path:
    predictions = run / "predictions" / f"{task}.jsonl"
    rows = read_jsonl(predictions)
    write_jsonl(predictions, [{**rows[0], "prediction": value}, *rows[1:]])
    return predictions


def test_a_prediction_edited_to_another_answer_is_refused_until_the_task_is_computed_again(cli, mera_run):
    run, _ = mera_run
    assert export(cli, run).exit_code == 0
    computed = exported_parus(run)
    (run.parent / "submission.zip").unlink()
    edited = edit_prediction(run, "parus", 1 - read_jsonl(run / "predictions" / "parus.jsonl")[0]["prediction"])
    refused = export(cli, run)
    assert (refused.exit_code, refused.output) == (
        2,
        f"error: {edited}: changed since the run wrote it; compute parus again: rueval run --resume -o {run}\n",
    )
    assert not (run.parent / "submission.zip").exists()
    assert cli("run", "--resume", "-o", run).exit_code == 0  # as the message says
    assert export(cli, run).exit_code == 0 and exported_parus(run) == computed


def test_an_edited_test_file_is_refused_until_the_task_is_computed_again(cli, mera_run):
    run, data = mera_run
    test = data / "data" / "rcb" / "test.jsonl"
    test.write_text(test.read_text(encoding="utf-8").replace("Маша", "Даша"), encoding="utf-8")
    refused = export(cli, run)
    assert (refused.exit_code, refused.output) == (
        2,
        f"error: {test} or {test.with_name('train.jsonl')}: changed since the run computed rcb's predictions "
        f"from it; compute rcb again: rueval run --resume -o {run}\n",
    )
    assert not (run.parent / "submission.zip").exists()
    assert cli("run", "--resume", "-o", run).exit_code == 0
    assert export(cli, run).exit_code == 0


@pytest.mark.parametrize(("task", "value"), [("parus", "bogus"), ("parus", True), ("ru_worldtree", "bogus")])
def test_a_prediction_that_is_none_of_the_tasks_answers_is_a_one_line_error(cli, mera_run, task, value):
    run, _ = mera_run
    edited = edit_prediction(run, task, value)
    recorded = json.loads((run / "run.json").read_text(encoding="utf-8"))  # its checksum edited to match
    recorded["files"][task][f"predictions/{task}.jsonl"] = hashlib.sha256(edited.read_bytes()).hexdigest()
    (run / "run.json").write_text(json.dumps(recorded), encoding="utf-8")
    refused = export(cli, run)
    first = read_jsonl(edited)[0]
    assert refused.exit_code == 2 and len(refused.output.splitlines()) == 1
    assert refused.output.startswith(
        f"error: {edited}: the prediction for id {first['idx']!r} is {value!r}, none of {task}'s answers ("
    )
    assert not (run.parent / "submission.zip").exists()


@pytest.fixture
def rsg_run(cli, tmp_path) -> Path:
    """A majority run that predicted RSG's test splits (the bundled samples)."""
    result = cli("run", "-m", "majority", "-t", "rsg", "--split", "test", "--predict-only", "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    return tmp_path / "run"


def read_rsg_zip(path: Path) -> dict[str, list[dict]]:
    with zipfile.ZipFile(path) as archive:
        return {name: [json.loads(line) for line in archive.read(name).splitlines()] for name in archive.namelist()}


def test_rsgs_export_zips_the_runs_own_test_predictions_as_the_sample_submission_writes_them(cli, rsg_run):
    result = cli("export", "--format", "rsg", rsg_run, "-o", rsg_run.parent / "rsg.zip")
    assert result.exit_code == 0, result.output
    files = read_rsg_zip(rsg_run.parent / "rsg.zip")
    assert len(files) == 9
    for folder, task in (("PARus", "parus"), ("RUSSE", "russe")):
        rows = read_jsonl(rsg_run / "predictions" / f"{task}.jsonl")
        written = {"PARus": lambda p: p, "RUSSE": lambda p: str(p).lower()}[folder]  # ints; "true"/"false"
        assert files[f"{folder}.jsonl"] == [{"idx": row["idx"], "label": written(row["prediction"])} for row in rows]
    muserc = files["MuSeRC.jsonl"]  # answers nested under their question and passage, every test answer once
    answers = [(p["idx"], q["idx"], a["idx"]) for p in muserc for q in p["passage"]["questions"] for a in q["answers"]]
    assert answers == [tuple(row["idx"]) for row in read_jsonl(rsg_run / "predictions" / "muserc.jsonl")]


def test_rsgs_export_refuses_an_edited_prediction_and_a_run_that_did_not_predict_test(cli, rsg_run, tmp_path):
    computed = read_jsonl(rsg_run / "predictions" / "rcb.jsonl")[0]["prediction"]
    edited = edit_prediction(rsg_run, "rcb", "neutral" if computed != "neutral" else "entailment")
    refused = cli("export", "--format", "rsg", rsg_run, "-o", tmp_path / "rsg.zip")
    assert (refused.exit_code, refused.output) == (
        2,
        f"error: {edited}: changed since the run wrote it; compute rcb again: rueval run --resume -o {rsg_run}\n",
    )
    assert cli("run", "-m", "majority", "-t", "rcb", "-o", tmp_path / "val").exit_code == 0
    on_val = cli("export", "--format", "rsg", tmp_path / "val", "-o", tmp_path / "rsg.zip")
    assert on_val.exit_code == 2 and "predicted rcb (val), not the test split; run the RSG tasks with" in on_val.output
    assert not (tmp_path / "rsg.zip").exists()
