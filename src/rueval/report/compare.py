"""`rueval compare RUN_A RUN_B`: which score differences between two runs are beyond chance.

Both runs must have scored the same examples; their predictions files hold each example's idx and
gold, so the comparison needs no data, only the two run directories. Each common task gets the
paired-bootstrap difference (A minus B) of every metric, with its interval and p-value
(rueval.scoring.stats.paired_bootstrap).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.progress import progress
from rueval.results import RunResult, read_predictions
from rueval.scoring.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, check_bootstrap, paired_bootstrap
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
    check_bootstrap(resamples, seed)
    summary_a, summary_b = RunResult.read(run_a), RunResult.read(run_b)
    common = [name for name in summary_a.tasks if name in summary_b.tasks]
    if not common:
        raise RuevalError(
            f"{run_a} and {run_b} share no task: {', '.join(summary_a.tasks) or 'none'} "
            f"vs {', '.join(summary_b.tasks) or 'none'}"
        )
    tasks: dict[str, Any] = {}
    for name in progress(common, "comparing runs", total=len(common)):
        task = TASKS[name]  # RunResult.read has checked that every task name is known
        examples, preds_a = scored_examples(task, run_a)
        examples_b, preds_b = scored_examples(task, run_b)
        _check_same_examples(task, run_a, examples, run_b, examples_b)
        differences = paired_bootstrap(task, examples, preds_a, preds_b, resamples, confidence, seed)
        tasks[name] = {"n": len(examples), "metrics": {metric: d.as_dict() for metric, d in differences.items()}}
    return {
        "run_a": {"dir": str(run_a), "model": summary_a.model},
        "run_b": {"dir": str(run_b), "model": summary_b.model},
        "difference": "A minus B, in metric points (x100)",
        "resamples": resamples,
        "confidence": confidence,
        "seed": seed,
        "significance_level": SIGNIFICANCE_LEVEL,
        "only_in_a": [name for name in summary_a.tasks if name not in summary_b.tasks],
        "only_in_b": [name for name in summary_b.tasks if name not in summary_a.tasks],
        "tasks": tasks,
    }


def scored_examples(task: Task, run_dir: Path) -> tuple[list[Example], list[Any]]:
    """The scored examples (idx, gold and group, as the run stored them) and the predictions of a run."""
    path = run_dir / "predictions" / f"{task.name}.jsonl"
    rows = read_predictions(task, path)
    if task.nested and task.kind == "classification" and any(row.group is None for row in rows):
        raise DataError(
            str(path), "missing: rows need their question (written by an older rueval; run again)", field="group"
        )
    return [Example(idx=row.idx, fields={}, label=row.gold, group=row.group) for row in rows], [
        row.prediction for row in rows
    ]


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
