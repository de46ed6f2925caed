"""`rueval compare RUN_A RUN_B`: which score differences between two runs are beyond chance.

Both runs must have scored the same examples; their predictions files hold each example's idx and
gold, so the comparison needs no data, only the two run directories. Each common task gets the
paired-bootstrap difference (A minus B) of every metric, with its interval and p-value
(rueval.scoring.stats.paired_bootstrap).

Two task-file runs pair each task's documents by lm-eval's doc_id and resample lm-eval's per-sample values
(their predictions files), each metric aggregated by lm-eval's own function; a group is not paired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.progress import progress
from rueval.results import (
    LM_EVAL,
    RunResult,
    TaskResult,
    metric_names,
    predictions_file,
    read_predictions,
    read_sample_scores,
)
from rueval.scoring.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Difference,
    check_bootstrap,
    paired_bootstrap,
    paired_item_bootstrap,
)
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
        result_a, result_b = summary_a.tasks[name], summary_b.tasks[name]
        if (result_a.benchmark == LM_EVAL) != (result_b.benchmark == LM_EVAL):
            raise RuevalError(f"{name}: one run's is a task file's, the other's rueval's own task: not comparable")
        if result_a.subtasks or result_b.subtasks:
            continue  # a group: its documents are its tasks', paired there
        if result_a.benchmark == LM_EVAL:
            n, differences = task_file_differences(
                name, (run_a, result_a), (run_b, result_b), resamples, confidence, seed
            )
        else:
            task = TASKS[name]  # RunResult.read has checked that every other task name is known
            examples, preds_a = scored_examples(task, run_a)
            examples_b, preds_b = scored_examples(task, run_b)
            pairs_a, pairs_b = [(e.idx, e.label) for e in examples], [(e.idx, e.label) for e in examples_b]
            _check_same_items(str(run_b / "predictions" / f"{task.name}.jsonl"), run_a, pairs_a, pairs_b, "examples")
            n, differences = (
                len(examples),
                paired_bootstrap(task, examples, preds_a, preds_b, resamples, confidence, seed),
            )
        tasks[name] = {"n": n, "metrics": {metric: d.as_dict() for metric, d in differences.items()}}
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


def task_file_differences(
    name: str,
    run_a: tuple[Path, TaskResult],
    run_b: tuple[Path, TaskResult],
    resamples: int,
    confidence: float,
    seed: int,
) -> tuple[int, dict[str, Difference]]:
    """A minus B of every metric both runs of a task file scored, paired by doc_id: each metric's per-sample
    values resampled as lm-eval aggregates them (its mean, or its own function by name)."""
    from rueval.tasks.lm_eval_tasks import aggregation

    (dir_a, result_a), (dir_b, result_b) = run_a, run_b
    rows_a = read_sample_scores(predictions_file(dir_a, name), metric_names(name, result_a))
    rows_b = read_sample_scores(predictions_file(dir_b, name), metric_names(name, result_b))
    pairs_a, pairs_b = [(row.idx, row.gold) for row in rows_a], [(row.idx, row.gold) for row in rows_b]
    _check_same_items(str(predictions_file(dir_b, name)), dir_a, pairs_a, pairs_b, "documents")
    differences = {}
    for metric in (m for m in metric_names(name, result_a) if m in result_b.metrics):
        how = result_a.aggregation.get(metric, "mean")
        if how != result_b.aggregation.get(metric, "mean"):
            raise RuevalError(f"{name}: {metric} is aggregated as {how!r} in {dir_a}, otherwise in {dir_b}")
        if not how:
            raise RuevalError(f"{name}: {metric} is aggregated by the task file's own function: not compared")
        differences[metric] = paired_item_bootstrap(
            result_a.metrics[metric],
            result_b.metrics[metric],
            [row.values[metric] for row in rows_a],
            [row.values[metric] for row in rows_b],
            None if how == "mean" else aggregation(how),
            name,
            resamples,
            confidence,
            seed,
        )
    return len(rows_a), differences


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


def _check_same_items(file_b: str, run_a: Path, items_a: list[Any], items_b: list[Any], unit: str) -> None:
    """Two runs' (idx, gold) of a task, item by item: another count, id or gold is one line naming B's file."""
    if len(items_a) != len(items_b):
        raise DataError(
            file_b, f"{len(items_b)} {unit}, but {run_a} scored {len(items_a)}: the runs scored different data"
        )
    for number, ((idx_a, gold_a), (idx_b, gold_b)) in enumerate(zip(items_a, items_b, strict=True), 1):
        for field, value_a, value_b in (("idx", idx_a, idx_b), ("gold", gold_a, gold_b)):
            if value_a != value_b:
                raise DataError(
                    file_b,
                    f"{value_b!r:.60} differs from {value_a!r:.60} in {run_a}: the runs scored different {unit}",
                    line=number,
                    field=field,
                )
