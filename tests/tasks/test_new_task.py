"""A task added as the recipe says: a declaration module, a prompt module and sample files, made known
with one registration line, then run by every kind of solver: majority, TF-IDF, a language model, a
perturbation and fine-tuning. Nothing else in rueval is edited for it. The task is the first of a new
benchmark or, in the recipe's second form, joins an existing one (RussianSuperGLUE) without changing
its total nor its submission."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import import_module
from pathlib import Path

import pytest
from support import (
    PARAPHRASE_DECLARATION,
    PARAPHRASE_IN_RSG,
    PARAPHRASE_PROMPT,
    read_jsonl,
    write_paraphrase_data,
    write_paraphrase_modules,
)

import rueval
from rueval.data.local import SAMPLES_DIR
from rueval.tasks import BENCHMARKS, RSG, Record, declare, get_task, register, resolve_tasks
from rueval.tasks.prompts import get_prompt


@pytest.fixture
def new_task(tmp_path: Path, monkeypatch, task_registry) -> tuple[Path, dict[str, list[dict]]]:
    """The made-up task registered; its data folder (the samples' layout) and its records."""
    package = write_paraphrase_modules(tmp_path / "package")
    splits = write_paraphrase_data(tmp_path / "samples" / "Paraphrase")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.delitem(sys.modules, "paraphrase", raising=False)  # the other form's, imported by another test
    declare(import_module("paraphrase").BENCHMARK)  # the one registration line
    return tmp_path / "samples", splits


def _scores(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))["tasks"]["paraphrase"]["metrics"]


def _predictions(out: Path) -> list[dict]:
    return read_jsonl(out / "predictions" / "paraphrase.jsonl")


def test_the_new_task_is_known_by_name_with_the_shape_it_declares(new_task, cli):
    task = get_task("Paraphrase")
    assert (task.kind, task.labels, task.text_fields, task.benchmark) == (
        "classification",
        (0, 1),
        ("sentence1", "sentence2"),
        "madeup",
    )
    result = cli("tasks")
    assert result.exit_code == 0 and "paraphrase" in result.output and "MADEUP" in result.output


def test_majority_and_tfidf_score_the_new_task(new_task, cli, tmp_path):
    data, splits = new_task
    for model in ("majority", "tfidf"):
        result = cli("run", "-m", model, "-t", "paraphrase", "--data", data, "-o", tmp_path / model)
        assert result.exit_code == 0, result.output
    train_labels = [row["label"] for row in splits["train"]]
    majority = max((0, 1), key=train_labels.count)
    gold = [row["label"] for row in splits["test"]]
    assert [row["prediction"] for row in _predictions(tmp_path / "majority")] == [majority] * len(gold)
    assert _scores(tmp_path / "majority") == {"accuracy": 100 * gold.count(majority) / len(gold)}
    # the pair's cosine, a TF-IDF field feature, tells a reordered sentence from another one
    assert _scores(tmp_path / "tfidf") == {"accuracy": 100.0}


def test_a_language_model_answers_the_new_task_with_its_prompt(new_task, cli, tmp_path, tiny_gpt2_dir):
    data, splits = new_task
    first = splits["test"][0]
    (example,) = get_task("paraphrase").parse(Record(first, "test.jsonl", 1, 0))
    (question,) = get_prompt("paraphrase").questions(example)  # the template filled with the record's fields
    assert question.context.startswith(f"Предложение 1: {first['sentence1']} Предложение 2: {first['sentence2']}")
    assert [(c.continuation, c.label) for c in question.choices] == [(" Нет", 0), (" Да", 1)]
    out = tmp_path / "lm"
    result = cli("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "paraphrase", "--data", data, "--shots", "0,1", "-o", out)
    assert result.exit_code == 0, result.output
    predictions = _predictions(out)
    assert [row["gold"] for row in predictions] == [row["label"] for row in splits["test"]]
    assert {row["prediction"] for row in predictions} <= {0, 1}
    shots = json.loads((out / "results.json").read_text(encoding="utf-8"))["tasks"]["paraphrase"]["shots"]
    assert set(shots) == {"0", "1"}
    right = sum(row["prediction"] == row["gold"] for row in predictions)
    assert shots["0"]["metrics"]["accuracy"] == pytest.approx(100 * right / len(predictions))


def test_the_new_tasks_texts_are_perturbed_and_its_labels_kept(new_task, cli, tmp_path):
    data, splits = new_task
    out = tmp_path / "perturbed"
    result = cli("perturb", "-t", "paraphrase", "--data", data, "--perturbations", "butter_fingers:0.5", "-o", out)
    assert result.exit_code == 0, result.output
    rows = read_jsonl(out / "Paraphrase" / "test.jsonl")
    originals = {row["idx"]: row for row in rows if row["perturbation"] == "paraphrase"}
    perturbed = [row for row in rows if row["perturbation"] == "butter_fingers"]
    assert len(originals) == len(perturbed) == len(splits["test"])
    changed = 0
    for row in perturbed:
        original = originals[row["idx"]]
        assert row["label"] == original["label"]
        changed += (row["sentence1"], row["sentence2"]) != (original["sentence1"], original["sentence2"])
    assert changed > len(perturbed) / 2  # both sentences are the perturbable texts, at rate 0.5


@pytest.mark.slow  # trains a model
def test_an_encoder_is_fine_tuned_on_the_new_task(new_task, cli, tmp_path, tiny_bert):
    data, splits = new_task
    out, work = tmp_path / "finetune", tmp_path / "work"
    args = ("--ft-epochs", "2", "--ft-lr", "1e-3", "--ft-max-length", "64", "--ft-save", work / "saved")
    result = cli("run", "-m", f"finetune:{tiny_bert}", "-t", "paraphrase", "--data", data, *args, "-o", out)
    assert result.exit_code == 0, result.output
    predictions = _predictions(out)
    assert len(predictions) == len(splits["test"]) and {row["prediction"] for row in predictions} <= {0, 1}
    marker = json.loads((work / "saved" / "paraphrase" / "rueval-finetune.json").read_text(encoding="utf-8"))
    # a pair head over the task's labels, trained on its train split less the held-out tenth
    assert (marker["head"], marker["labels"], marker["report"]["train_examples"]) == ("pair", [0, 1], 29)


@pytest.mark.slow  # launches processes
def test_the_recipe_in_a_copy_of_rueval_touches_three_files_and_one_line(tmp_path):
    """In rueval's own source: the declaration module, the prompt module, the sample files, and the task's
    module named in DECLARATIONS; the bundled-samples run then scores it."""
    copy = tmp_path / "src" / "rueval"
    shutil.copytree(Path(rueval.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    declaration = PARAPHRASE_DECLARATION.replace('        prompt="paraphrase_prompt:PROMPT",\n', "")
    (copy / "tasks" / "paraphrase.py").write_text(declaration, encoding="utf-8")
    (copy / "tasks" / "prompts" / "paraphrase.py").write_text(PARAPHRASE_PROMPT, encoding="utf-8")
    splits = write_paraphrase_data(copy / "data" / "samples" / "Paraphrase")
    registry = copy / "tasks" / "__init__.py"
    line = 'DECLARATIONS = ("rsg", "tape", "mera")'
    assert line in registry.read_text(encoding="utf-8")
    registry.write_text(registry.read_text(encoding="utf-8").replace(line, line[:-1] + ', "paraphrase")'))
    out = tmp_path / "run"
    command = [sys.executable, "-m", "rueval", "run", "-m", "tfidf", "-t", "madeup", "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": str(copy.parent)}
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["tasks"]["paraphrase"]["metrics"] == {"accuracy": 100.0}
    assert results["tasks"]["paraphrase"]["n"] == len(splits["test"])


def test_the_new_benchmark_selects_its_task_and_is_ranked_against_no_papers_rows(new_task, cli, tmp_path):
    data, _ = new_task
    assert BENCHMARKS["madeup"].title == "Made-up" and resolve_tasks("madeup") == [get_task("paraphrase")]
    result = cli("run", "-m", "majority", "-t", "madeup", "--data", data, "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert results["tasks"]["paraphrase"]["benchmark"] == "madeup" and results["rsg_total"] is None
    result = cli("leaderboard", tmp_path / "run", "-o", tmp_path / "board")
    assert result.exit_code == 0 and not (tmp_path / "board").exists()  # no papers' rows: no board


@pytest.fixture
def task_in_rsg(tmp_path: Path, monkeypatch, task_registry) -> Path:
    """The made-up task declared into RussianSuperGLUE; a data folder of the samples and its files."""
    package = write_paraphrase_modules(tmp_path / "package", PARAPHRASE_IN_RSG)
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.delitem(sys.modules, "paraphrase", raising=False)
    register(*import_module("paraphrase").TASKS)  # the one registration line
    data = tmp_path / "data"
    shutil.copytree(SAMPLES_DIR, data)
    write_paraphrase_data(data / "Paraphrase")
    return data


def test_a_task_added_to_rsg_runs_with_it_and_changes_neither_its_total_nor_its_submission(task_in_rsg, cli, tmp_path):
    assert [task.name for task in resolve_tasks("rsg")] == [*(task.name for task in RSG.tasks), "paraphrase"]
    result = cli("run", "-m", "majority", "-t", "rsg", "--data", task_in_rsg, "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert "paraphrase" in results["tasks"]
    nine = [results["tasks"][task.name]["score"] for task in RSG.tasks]
    assert results["rsg_total"] == pytest.approx(sum(nine) / len(nine))  # the paper's nine, not ten
    result = cli("submit", "-m", "majority", "--data", task_in_rsg, "-o", tmp_path / "submission.zip")
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(tmp_path / "submission.zip") as archive:
        assert sorted(archive.namelist()) == sorted(f"{task.folder}.jsonl" for task in RSG.tasks)
    result = cli("leaderboard", tmp_path / "run", "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    header = (tmp_path / "board" / "leaderboard_rsg.md").read_text(encoding="utf-8").splitlines()[2]
    assert header.endswith("| Paraphrase (Acc) | Source |")  # its column after the paper's nine
