"""A run: load every task's data, fit and apply a solver, score, and write the results.

OUT/results.json is written once, atomically, after every task has finished; each finished
task is also kept in OUT/tasks/<task>.json, so a rerun with the same settings on the same data
reuses it instead of computing it again (an interrupted run resumes where it stopped).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rueval import __version__
from rueval.data import DataSource, Split, open_data
from rueval.errors import RuevalError
from rueval.metrics import rsg_total, score_task
from rueval.progress import progress
from rueval.report.results import read_json, write_json, write_jsonl
from rueval.solvers import Solver, make_solver
from rueval.tasks import TASKS, Example, Task


@dataclass(frozen=True)
class TaskData:
    """What one task is evaluated on: the scored split and the split the solver learns from."""

    task: Task
    eval: Split
    train: Split | None

    @property
    def sha256(self) -> str:
        """One hash over the files the task's score depends on."""
        parts = [self.eval.sha256, self.train.sha256 if self.train else ""]
        return hashlib.sha256("/".join(parts).encode()).hexdigest()


def load_task_data(source: DataSource, task: Task, split: str | None, limit: int | None) -> TaskData:
    return TaskData(task, _eval_split(source, task, split, limit), load_train(source, task))


def _eval_split(source: DataSource, task: Task, split: str | None, limit: int | None) -> Split:
    """The requested split, or by default test when it is labelled, else val."""
    if split is not None:
        chosen = source.load(task, split, limit)
        if not chosen.labelled:
            raise RuevalError(
                f"{chosen.file}: the {split} split of {task.name} has no gold labels, so it cannot be "
                "scored; score val, or predict it with `rueval submit`"
            )
        return chosen
    test = source.load(task, "test", limit) if source.has_split(task, "test") else None
    if test is not None and test.labelled:
        return test
    if "val" not in task.split_files or not source.has_split(task, "val"):
        if test is None:
            raise source.missing(task, "test")
        raise RuevalError(f"{test.file}: {task.name} has no gold labels in test and no val split to score instead")
    return source.load(task, "val", limit)


def load_train(source: DataSource, task: Task) -> Split | None:
    """The task's train split, or the split its label priors are borrowed from (LiDiRus: TERRa)."""
    for name in (task.name, task.train_task):
        if name and source.has_split(TASKS[name], "train"):
            return source.load(TASKS[name], "train")
    return None


def solve(solver: Solver, task: Task, train: Split | None, examples: Sequence[Example]) -> list[Any]:
    """Fit the solver on the train split (if any) and predict the examples."""
    solver.fit(task, train.examples if train else [])
    return solver.predict(task, progress(examples, f"{solver.name} on {task.name}", total=len(examples)))


def run(
    tasks: Sequence[Task],
    model: str,
    data: str | None = None,
    split: str | None = None,
    out: Path = Path("runs/latest"),
    seed: int = 0,
    limit: int | None = None,
) -> dict[str, Any]:
    """Evaluate ``model`` on ``tasks`` and write OUT/results.json and OUT/predictions/."""
    started = time.perf_counter()
    source = open_data(data)
    solver = make_solver(model, seed)
    # All data is read and checked before any work: bad input fails fast and writes nothing.
    loaded = [load_task_data(source, task, split, limit) for task in tasks]
    settings = {"model": model, "seed": seed, "limit": limit, "rueval_version": __version__}
    results: dict[str, dict[str, Any]] = {}
    for task_data in loaded:
        task = task_data.task
        fingerprint = _fingerprint(settings, task_data)
        saved = out / "tasks" / f"{task.name}.json"
        if saved.exists() and read_json(saved).get("fingerprint") == fingerprint:
            results[task.name] = read_json(saved)
            continue
        task_started = time.perf_counter()
        examples = task_data.eval.examples
        preds = solve(solver, task, task_data.train, examples)
        scores = score_task(task, examples, preds)
        write_jsonl(
            out / "predictions" / f"{task.name}.jsonl",
            ({"idx": e.idx, "prediction": p, "gold": e.label} for e, p in zip(examples, preds, strict=True)),
        )
        results[task.name] = {
            "benchmark": task.benchmark,
            "split": task_data.eval.name,
            "n": len(examples),
            "score": scores.score,
            "metrics": scores.metrics,
            "breakdown": scores.breakdown,
            "data": {
                "file": task_data.eval.file,
                "train_file": task_data.train.file if task_data.train else None,
                "sha256": task_data.sha256,
            },
            "wall_time_s": time.perf_counter() - task_started,
            "fingerprint": fingerprint,
        }
        write_json(saved, results[task.name])
    summary = {
        **settings,
        "data": source.description,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": time.perf_counter() - started,
        "scale": "metrics are percentages (x100), as in the papers",
        "rsg_total": rsg_total({name: r["score"] for name, r in results.items()}),
        "tasks": results,
    }
    write_json(out / "results.json", summary)
    return summary


def _fingerprint(settings: dict[str, Any], task_data: TaskData) -> str:
    key = {**settings, "task": task_data.task.name, "split": task_data.eval.name, "data": task_data.sha256}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
