"""`rueval compare RUN_A RUN_B`: which score differences between two runs are beyond chance.

Both runs must have scored the same examples; their predictions files hold each example's idx and
gold, so the comparison needs no data, only the two run directories. Each common task gets the
paired-bootstrap difference (A minus B) of every metric, with its interval (rueval.scoring.stats.paired_bootstrap),
and the p-value of the paired test that fits the metric (rueval.scoring.decisions): McNemar's exact test where
every item is right or wrong (accuracy, exact match), else the paired bootstrap's. Each task also gets the share
of items the runs disagree on and the smallest difference its n shows at 80% power at that share; and where a
run's sample log scores items several times (few-shot episodes), the standard error of its mean clustered by item.

Two task-file runs pair each task's documents by lm-eval's doc_id and resample lm-eval's per-sample values
(their predictions files), each metric aggregated by lm-eval's own function; a group is not paired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.progress import progress
from rueval.report.examples import read_samples
from rueval.results import (
    LM_EVAL,
    RunResult,
    TaskResult,
    metric_names,
    predictions_file,
    read_sample_scores,
    scored_examples,
)
from rueval.results.lm_eval import sample_files
from rueval.scoring.decisions import (
    ALPHA,
    POWER,
    Decision,
    PairedOutcomes,
    binary_outcomes,
    clustered_standard_error,
    decide,
    naive_standard_error,
    paired_outcomes,
)
from rueval.scoring.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    check_bootstrap,
    paired_bootstrap,
    paired_item_bootstrap,
)
from rueval.scoring.task_scores import is_correct
from rueval.tasks import TASKS, Example, Task


def compare_runs(
    run_a: Path,
    run_b: Path,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> dict[str, Any]:
    """A minus B of every metric of every task both runs scored, each with its paired test's p-value; per task the
    runs' discordance with the minimum detectable effect there, and the clustered errors of repeated scores."""
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
            runs = (run_a, result_a), (run_b, result_b)
            n, decisions = task_file_differences(name, *runs, resamples, confidence, seed)
            right = next((d.outcomes for d in decisions.values() if d.outcomes is not None), None)
        else:
            task = TASKS[name]  # RunResult.read has checked that every other task name is known
            examples, preds_a, preds_b = paired_examples(task, run_a, run_b)
            n, decisions = len(examples), task_decisions(task, examples, preds_a, preds_b, resamples, confidence, seed)
            right = paired_outcomes(
                [is_correct(task, e.label, p) for e, p in zip(examples, preds_a, strict=True)],
                [is_correct(task, e.label, p) for e, p in zip(examples, preds_b, strict=True)],
            )
        tasks[name] = {
            "n": n,
            **power_at(right),
            "repeated": {run: found for run, path in (("a", run_a), ("b", run_b)) if (found := repeated(path, name))},
            "metrics": {metric: d.as_dict() for metric, d in decisions.items()},
        }
    return {
        "run_a": {"dir": str(run_a), "model": summary_a.model},
        "run_b": {"dir": str(run_b), "model": summary_b.model},
        "difference": "A minus B, in metric points (x100)",
        "resamples": resamples,
        "confidence": confidence,
        "seed": seed,
        "significance_level": ALPHA,
        "power": POWER,
        "only_in_a": [name for name in summary_a.tasks if name not in summary_b.tasks],
        "only_in_b": [name for name in summary_b.tasks if name not in summary_a.tasks],
        "tasks": tasks,
    }


def task_decisions(
    task: Task,
    examples: list[Example],
    preds_a: list[Any],
    preds_b: list[Any],
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, Decision]:
    """The paired-bootstrap difference of every metric and the score, each decided by its paired test."""
    differences = paired_bootstrap(task, examples, preds_a, preds_b, resamples, confidence, seed)
    return {
        name: decide(difference, *(binary_outcomes(task, examples, preds, name) for preds in (preds_a, preds_b)))
        if name in task.metrics
        else Decision(difference)
        for name, difference in differences.items()
    }


def power_at(right: PairedOutcomes | None) -> dict[str, Any]:
    """The share of items on which one run is right and the other wrong, and the smallest difference (points)
    of that share of right answers the task's n shows at 80% power (None: the runs never disagree, or n is
    too small for any)."""
    if right is None:
        return {"discordance": None, "minimum_detectable_effect": None}
    effect = right.minimum_detectable_effect()
    return {"discordance": right.discordance, "minimum_detectable_effect": None if effect is None else 100 * effect}


def repeated(run_dir: Path, task: str) -> list[dict[str, Any]]:
    """Per few-shot setting of a run's sample log in which items have several lines (episodes): the mean of
    right answers (x100) with its standard error clustered by item and the naive one; none without a log of the
    task or where each item was scored once."""
    logs = sample_files(run_dir, task)
    if not logs:
        return []
    path = logs[-1]  # the newest
    by_k: dict[Any, tuple[list[float], list[str]]] = {}
    for line in read_samples(path):
        if line.get("correct") is None:
            continue  # a task file's log (lm-eval's fields), or an example without an answer
        if not isinstance(line["correct"], bool):
            raise DataError(str(path), f"doc_id {line['doc_id']}: expected true or false", field="correct")
        values, items = by_k.setdefault(line.get("k"), ([], []))
        values.append(float(line["correct"]))
        items.append(repr(line.get("idx", line["doc_id"])))
    return [
        {
            "k": k,
            "items": len(set(items)),
            "scores": len(values),
            "mean": 100 * sum(values) / len(values),
            "se": 100 * clustered_standard_error(values, items),
            "naive_se": 100 * naive_standard_error(values),
        }
        for k, (values, items) in by_k.items()
        if 1 < len(set(items)) < len(items)
    ]


def task_file_differences(
    name: str,
    run_a: tuple[Path, TaskResult],
    run_b: tuple[Path, TaskResult],
    resamples: int,
    confidence: float,
    seed: int,
) -> tuple[int, dict[str, Decision]]:
    """A minus B of every metric both runs of a task file scored, paired by doc_id: each metric's per-sample
    values resampled as lm-eval aggregates them (its mean, or its own function by name); a mean of values that
    are all 0 or 1 decided by McNemar's test."""
    from rueval.tasks.lm_eval_tasks import aggregation

    (dir_a, result_a), (dir_b, result_b) = run_a, run_b
    rows_a = read_sample_scores(predictions_file(dir_a, name), metric_names(name, result_a))
    rows_b = read_sample_scores(predictions_file(dir_b, name), metric_names(name, result_b))
    pairs_a, pairs_b = [(row.idx, row.gold) for row in rows_a], [(row.idx, row.gold) for row in rows_b]
    _check_same_items(str(predictions_file(dir_b, name)), dir_a, pairs_a, pairs_b, "documents")
    decisions = {}
    for metric in (m for m in metric_names(name, result_a) if m in result_b.metrics):
        how = result_a.aggregation.get(metric, "mean")
        if how != result_b.aggregation.get(metric, "mean"):
            raise RuevalError(f"{name}: {metric} is aggregated as {how!r} in {dir_a}, otherwise in {dir_b}")
        if not how:
            raise RuevalError(f"{name}: {metric} is aggregated by the task file's own function: not compared")
        values_a, values_b = [row.values[metric] for row in rows_a], [row.values[metric] for row in rows_b]
        difference = paired_item_bootstrap(
            result_a.metrics[metric],
            result_b.metrics[metric],
            values_a,
            values_b,
            None if how == "mean" else aggregation(how),
            name,
            resamples,
            confidence,
            seed,
        )
        decisions[metric] = decide(difference, values_a, values_b) if how == "mean" else Decision(difference)
    return len(rows_a), decisions


def paired_examples(task: Task, run_a: Path, run_b: Path) -> tuple[list[Example], list[Any], list[Any]]:
    """The examples both runs scored (a DataError unless they are the same) and each run's predictions."""
    examples, preds_a = scored_examples(task, run_a)
    examples_b, preds_b = scored_examples(task, run_b)
    pairs_a, pairs_b = [(e.idx, e.label) for e in examples], [(e.idx, e.label) for e in examples_b]
    _check_same_items(str(run_b / "predictions" / f"{task.name}.jsonl"), run_a, pairs_a, pairs_b, "examples")
    return examples, preds_a, preds_b


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
