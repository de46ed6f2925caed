"""`rueval compare RUN_A RUN_B`: which score differences between two runs are beyond chance.

Both runs must have scored the same examples; their predictions files hold each example's idx and
gold, so the comparison needs no data, only the two run directories. Each common task gets the
paired-bootstrap difference (A minus B) of every metric, with its interval and p-value
(rueval.report.stats.paired_bootstrap).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rueval.data.local import decode_lines, parse_json_line
from rueval.errors import DataError, RuevalError
from rueval.progress import progress
from rueval.report.runs import load_results
from rueval.report.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, paired_bootstrap
from rueval.tasks import TASKS, Example, Task

SIGNIFICANCE_LEVEL = 0.05


def compare_runs(
    run_a: Path,
    run_b: Path,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired-bootstrap differences, A minus B, of every metric of every task both runs scored."""
    summary_a, summary_b = load_results(run_a), load_results(run_b)
    common = [name for name in summary_a["tasks"] if name in summary_b["tasks"]]
    if not common:
        raise RuevalError(
            f"{run_a} and {run_b} share no task: {', '.join(summary_a['tasks']) or 'none'} "
            f"vs {', '.join(summary_b['tasks']) or 'none'}"
        )
    tasks: dict[str, Any] = {}
    for name in progress(common, "comparing runs", total=len(common)):
        task = TASKS[name]  # load_results has checked that every task name is known
        examples, preds_a = read_predictions(task, run_a)
        examples_b, preds_b = read_predictions(task, run_b)
        _check_same_examples(task, run_a, examples, run_b, examples_b)
        differences = paired_bootstrap(task, examples, preds_a, preds_b, resamples, confidence, seed)
        tasks[name] = {"n": len(examples), "metrics": {metric: d.as_dict() for metric, d in differences.items()}}
    return {
        "run_a": {"dir": str(run_a), "model": summary_a.get("model")},
        "run_b": {"dir": str(run_b), "model": summary_b.get("model")},
        "difference": "A minus B, in metric points (x100)",
        "resamples": resamples,
        "confidence": confidence,
        "seed": seed,
        "significance_level": SIGNIFICANCE_LEVEL,
        "only_in_a": [name for name in summary_a["tasks"] if name not in summary_b["tasks"]],
        "only_in_b": [name for name in summary_b["tasks"] if name not in summary_a["tasks"]],
        "tasks": tasks,
    }


def read_predictions(task: Task, run_dir: Path) -> tuple[list[Example], list[Any]]:
    """The scored examples (idx, gold, and the MuSeRC question as group) and the predictions of a
    run's predictions/<task>.jsonl. JSON turned tuples into lists; they are turned back."""
    path = run_dir / "predictions" / f"{task.name}.jsonl"
    if not path.is_file():
        raise RuevalError(f"{path}: missing; the run lists {task.name} but has no predictions for it")
    examples, preds = [], []
    for number, line in enumerate(decode_lines(path.read_bytes(), str(path)), 1):
        if not line.strip():
            continue
        row = parse_json_line(line, str(path), number)
        for key in ("idx", "prediction", "gold"):
            if key not in row:
                raise DataError(str(path), "missing", line=number, field=key)
        idx, gold, pred = _tupled(row["idx"]), _tupled(row["gold"]), _tupled(row["prediction"])
        for key, problem in (("gold", _gold_problem(task, gold)), ("prediction", _prediction_problem(task, pred))):
            if problem:
                raise DataError(str(path), problem, line=number, field=key)
        examples.append(Example(idx=idx, fields={}, label=gold, group=_group(task, idx)))
        preds.append(pred)
    if not examples:
        raise DataError(str(path), "has no predictions")
    return examples, preds


def _group(task: Task, idx: Any) -> Any:
    """A grouped-EM task's (MuSeRC's) group is its idx path without the answer: (passage, question)."""
    if task.kind == "classification" and "em" in task.metrics and isinstance(idx, tuple):
        return idx[:-1]
    return None


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def _gold_problem(task: Task, gold: Any) -> str | None:
    """Why a gold value cannot be the task's, or None."""
    if task.kind == "span":
        if isinstance(gold, tuple) and gold and all(isinstance(g, str) for g in gold):
            return None
        return f"expected a list of answer strings, got {gold!r:.60}"
    if task.kind == "multilabel":
        return _prediction_problem(task, gold)
    if any(gold == label and type(gold) is type(label) for label in task.labels):
        return None
    return f"unknown label {gold!r:.60}; expected one of: {', '.join(map(repr, task.labels))}"


def _prediction_problem(task: Task, pred: Any) -> str | None:
    """Why a prediction cannot be scored, or None. Classification predictions outside the label
    space are scored (as wrong), as they were in the run."""
    if task.kind == "span" and not isinstance(pred, str):
        return f"expected answer text, got {pred!r:.60}"
    if task.kind == "multilabel" and not (
        isinstance(pred, tuple) and len(pred) == len(task.categories) and all(v in (0, 1) for v in pred)
    ):
        return f"expected {len(task.categories)} values of 0 or 1, got {pred!r:.60}"
    if task.kind == "classification" and isinstance(pred, dict):
        return f"expected a label, got an object {pred!r:.60}"
    return None


def _check_same_examples(
    task: Task, run_a: Path, examples_a: Sequence[Example], run_b: Path, examples_b: Sequence[Example]
) -> None:
    file_b = str(run_b / "predictions" / f"{task.name}.jsonl")
    if len(examples_a) != len(examples_b):
        raise DataError(
            file_b, f"{len(examples_b)} examples, but {run_a} scored {len(examples_a)}: the runs scored different data"
        )
    for number, (a, b) in enumerate(zip(examples_a, examples_b, strict=True), 1):
        for field, value_a, value_b in (("idx", a.idx, b.idx), ("gold", a.label, b.label)):
            if value_a != value_b:
                raise DataError(
                    file_b,
                    f"{value_b!r:.60} differs from {value_a!r:.60} in {run_a}: the runs scored different examples",
                    line=number,
                    field=field,
                )
