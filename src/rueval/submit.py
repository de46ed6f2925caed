"""The RussianSuperGLUE leaderboard submission: one <Task>.jsonl per task, zipped.

Label formats follow the official RSG evaluation writer (RussianNLP/RussianSuperGLUE,
jiant-russian-v2/evaluate.py): strings for NLI labels, ints for PARus and MuSeRC, "true"/"false"
for RUSSE and DaNetQA, "True"/"False" for RWSD. MuSeRC and RuCoS predictions nest like their
input records.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rueval.data import DataSource, Split, TaskData, load_train, open_data
from rueval.files import atomic_path
from rueval.run.predict import predict_tasks
from rueval.solvers import Setting, make_solver
from rueval.tasks import BENCHMARKS, Example, Task


def submission_lines(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> list[dict[str, Any]]:
    if examples and isinstance(examples[0].idx, tuple):
        return _nested(examples, preds)
    to_label = task.extra.get("submission_label", lambda label: label)
    return [{"idx": e.idx, "label": to_label(p)} for e, p in zip(examples, preds, strict=True)]


def _nested(examples: Sequence[Example], preds: Sequence[Any]) -> list[dict[str, Any]]:
    """Predictions grouped under their passage, in input order."""
    passages: dict[Any, dict[str, Any]] = {}
    for example, pred in zip(examples, preds, strict=True):
        passage_idx, *path = example.idx
        line = passages.setdefault(passage_idx, {"idx": passage_idx})
        if len(path) == 2:  # MuSeRC: passage > question > answer
            question_idx, answer_idx = path
            questions = line.setdefault("passage", {"questions": []})["questions"]
            if not questions or questions[-1]["idx"] != question_idx:
                questions.append({"idx": question_idx, "answers": []})
            questions[-1]["answers"].append({"idx": answer_idx, "label": pred})
        else:  # RuCoS: passage > query
            line.setdefault("qas", []).append({"idx": path[0], "label": pred})
    return list(passages.values())


def submit(
    model: str,
    data: str | None,
    out: Path,
    seed: int = 0,
    solver_options: dict[str, Any] | None = None,
    shots: int = 0,
) -> dict[str, int]:
    """Predict every RSG test set and write the leaderboard zip; returns lines written per file.
    ``solver_options`` go to the solver's factory (e.g. the heuristic model's fallback); a language
    model answers with ``shots`` demonstrations (episode 0). The solver learns from train and val
    together (label priors from both, as the heuristics paper's submissions took them)."""
    source = open_data(data)
    solver = make_solver(model, seed, **(solver_options or {}))
    pending = [(task, TaskData(source.load(task, "test"), _train_and_val(source, task))) for task in BENCHMARKS["rsg"]]
    files: dict[str, str] = {}
    for predicted in predict_tasks(solver, pending, [Setting(shots)]):
        task, test = predicted.task, predicted.data.eval
        lines = submission_lines(task, test.examples, predicted.headline)
        files[f"{task.folder}.jsonl"] = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    with atomic_path(out) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return {name: text.count("\n") for name, text in files.items()}


def _train_and_val(source: DataSource, task: Task) -> Split | None:
    """The task's train split with its labelled val examples added (LiDiRus: TERRa's train)."""
    train = load_train(source, task)
    if train is None or not source.has_split(task, "val"):
        return train
    val = source.load(task, "val")
    return replace(train, examples=[*train.examples, *(e for e in val.examples if e.label is not None)])
