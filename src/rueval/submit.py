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
from pathlib import Path
from typing import Any

from rueval.data import open_data
from rueval.evaluate import load_train, solve
from rueval.report.results import atomic_path
from rueval.solvers import make_solver
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
    model: str, data: str | None, out: Path, seed: int = 0, solver_options: dict[str, Any] | None = None
) -> dict[str, int]:
    """Predict every RSG test set and write the leaderboard zip; returns lines written per file.
    ``solver_options`` go to the solver's factory (e.g. the heuristic model's fallback)."""
    source = open_data(data)
    solver = make_solver(model, seed, **(solver_options or {}))
    tests = [(task, source.load(task, "test")) for task in BENCHMARKS["rsg"]]
    files: dict[str, str] = {}
    for task, test in tests:
        preds = solve(solver, task, load_train(source, task), test.examples)
        lines = submission_lines(task, test.examples, preds)
        files[f"{task.folder}.jsonl"] = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    with atomic_path(out) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return {name: text.count("\n") for name, text in files.items()}
