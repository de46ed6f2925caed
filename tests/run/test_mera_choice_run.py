"""MERA's choice and classification tasks of its own end to end: a run on MERA's files (either layout),
scored where MERA's files have answers, and the submission zip in the shape of the records' own outputs."""

from __future__ import annotations

import json
import zipfile
from collections import Counter

import pytest
from mera_choice_files import CRITERIA, nine_tasks, write
from mera_files import LAYOUTS, seven_tasks
from support import read_samples
from typer.testing import CliRunner

from rueval.cli import app
from rueval.data.mera_generative_tasks import GENERATIVE
from rueval.data.mera_tasks import MERA_TASKS
from rueval.results import RunResult
from rueval.tasks import get_task

# rueval's name -> MERA's
NINE = {name: MERA_TASKS[name] for name in ("rummlu", "mamuramu", "mathlogicqa", "ruhhh", "ruhatespeech", "rutie",
                                            "bps", "lcs", "ruethics")}  # fmt: skip
TRAIN = {"lcs": "public_test", "ruhhh": "test", "ruhatespeech": "test", "rutie": "test", "ruethics": "test"}


def read_zip(path):
    with zipfile.ZipFile(path) as archive:
        return {name: json.loads(archive.read(name)) for name in archive.namelist()}


def run_and_export(base, data, model, *options, tasks=None):
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUEVAL_CACHE_DIR", str(base / "cache"))
        run = runner.invoke(app, ["run", "--data", str(data), "-t", tasks or ",".join(NINE), "-m", model,
                                  "-o", str(base / "out"), *options])  # fmt: skip
        assert run.exit_code == 0, run.output
        export = runner.invoke(app, ["export", "--format", "mera", str(base / "out"), "-o", str(base / "sub.zip")])
        assert export.exit_code == 0, export.output
    return RunResult.read(base / "out"), read_zip(base / "sub.zip")


def majority(task, labels):
    """The majority baseline's answer: the most frequent train label, ties to the first of the label space."""
    counts = Counter(labels)
    return max(get_task(task).labels or sorted(counts), key=lambda label: counts[label])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_majority_baseline_is_scored_with_meras_metrics_and_exported_in_meras_shape(tmp_path, layout):
    tasks = nine_tasks(test_answers=True)
    data = write(layout, tmp_path / "mera", {**seven_tasks(test_answers=True), **tasks})
    sixteen = [task for task in MERA_TASKS if task not in GENERATIVE]  # -t mera also names the generative seven
    results, files = run_and_export(tmp_path, data, "majority", tasks=",".join(sixteen))
    assert set(files) == {f"{MERA_TASKS[task]}.json" for task in sixteen} and len(files) == 16
    for task, folder in NINE.items():
        if task == "ruethics":
            continue
        train = [r["outputs"] for r in tasks[folder][TRAIN.get(task, "train")]]
        if task in ("ruhhh", "ruhatespeech", "rutie"):  # "1"/"2": the first or second reply
            answer = "12"[majority(task, [int(t) - 1 for t in train])]
        else:
            answer = majority(task, train)
        test = [r["outputs"] for r in tasks[folder]["test"]]
        result = results.tasks[task]
        assert result.split == "test" and result.metrics["accuracy"] == pytest.approx(
            100 * sum(t == answer for t in test) / len(test)
        ), task
        assert [entry["outputs"] for entry in files[f"{folder}.json"]["data"]["test"]] == [answer] * len(test), task
    anatomy = [r for r in tasks["ruMMLU"]["test"] if r["meta"]["domain"] == "anatomy"]
    assert results.tasks["rummlu"].breakdown["anatomy"]["n"] == len(anatomy)
    assert set(results.tasks["ruhatespeech"].breakdown) == {"женщины", "мигранты", "лгбт"}
    assert len(results.tasks["ruethics"].breakdown) == 10  # two questions of five criteria each
    ethics = files["ruEthics.json"]["data"]["test"]
    assert [entry["meta"] for entry in ethics] == [{"id": r["meta"]["id"]} for r in tasks["ruEthics"]["test"]]
    assert all(set(entry["outputs"]) == set(CRITERIA) for entry in ethics)
    rutie = files["ruTiE.json"]["data"]["test"]  # MERA's submission: a flat list keyed by dialogue and question
    assert [entry["meta"] for entry in rutie] == [
        {"dialog_id": r["meta"]["dialog_id"], "question_id": r["meta"]["question_id"]} for r in tasks["ruTiE"]["test"]
    ]


def test_a_language_model_runs_meras_settings_and_exports_every_test_id(tmp_path, tiny_gpt2_dir):
    tasks = nine_tasks()  # MERA's hidden answers where it hides them
    data = write("dataset snapshot", tmp_path / "mera", tasks)
    results, files = run_and_export(tmp_path, data, f"hf:{tiny_gpt2_dir}", "--log-samples")
    for task, folder in NINE.items():
        written = [entry["meta"].get("id") for entry in files[f"{folder}.json"]["data"]["test"]]
        if task != "rutie":
            assert written == [r["meta"]["id"] for r in tasks[folder]["test"]], task
    out = tmp_path / "out"
    for sample in read_samples(out, "rummlu"):  # one demonstration, from the item's own domain
        (arguments, *_) = sample["arguments"].values()
        demonstration, question = arguments["arg_0"].split("\n\n")
        assert sample["k"] == 1 and demonstration.startswith(f"Тема: {sample['doc']['domain']}.")
    assert {s["k"] for s in read_samples(tmp_path / "out", "ruethics")} == {0}  # MERA's ruEthics and ruHHH: 0 shots
    for entry in files["ruEthics.json"]["data"]["test"]:  # one answer under every criterion
        assert set(entry["outputs"]) == set(CRITERIA) and len(set(entry["outputs"].values())) == 1
        assert set(entry["outputs"].values()) <= {"0", "1"}
    asked = {s["idx"]: (s["arguments"]["gen_args_0"]["arg_0"], s["prediction"]) for s in read_samples(out, "rutie")}
    for record in tasks["ruTiE"]["test"]:  # each question after its dialogue's earlier ones, with the model's answers
        dialog, question = record["meta"]["dialog_id"], record["meta"]["question_id"]
        context, _ = asked[f"dialog_id:{dialog};question_id:{question}"]
        answers = [asked[f"dialog_id:{dialog};question_id:{q}"][1] for q in range(question)]
        shown = [f"Вопрос {q}?\n1. Да.\n2. Нет.\nОтвет: {'12'[a]}" for q, a in enumerate(answers)]
        assert context.count("Ответ: ") == question and all(turn in context for turn in shown)
        assert context.endswith(f"Вопрос {question}?\n1. Да.\n2. Нет.\nОтвет:")
    assert set(results.tasks) == {"ruhhh", "ruhatespeech", "rutie", "ruethics"}  # their tests have answers
    assert set(results.predicted) == {"rummlu", "mamuramu", "mathlogicqa", "bps", "lcs"}
