"""Scoring a task: its metrics (rueval.scoring.metrics) on its examples and predictions, the task score,
the breakdowns (LiDiRus per feature tag, Ethics per category, MERA's per domain or group), whether
one prediction is right, one example's sample-log metrics, and the RSG total.

``task_statistics`` gives the per-example statistics of every metric of a task; the scores are
their function on the whole sample, and the bootstrap (rueval.scoring.stats) applies it to resamples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np

from rueval.scoring.mera_scorers import full_marks, per_question
from rueval.scoring.metrics import ACCURACY, GRADE_NORM, MCC, Metric, OfSums, Outcomes, exact_match, metric
from rueval.tasks import RSG, Example, Task
from rueval.tasks.mera_generative import Graded


@dataclass(frozen=True)
class Scores:
    """A task's metrics (x100), their mean as the task score, and named sub-group breakdowns."""

    metrics: dict[str, float]
    breakdown: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return fmean(self.metrics.values())


@dataclass(frozen=True)
class TaskStatistics:
    """The per-example statistics of every metric of a task, side by side (examples x columns), and
    for each metric its columns and the function of their sums."""

    table: np.ndarray
    parts: tuple[tuple[str, slice, OfSums], ...]

    def metrics_of(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        """Each metric (x100) of summed statistics, one value per row of ``sums`` (a sample, a resample)."""
        return {name: 100 * of_sums(sums[:, columns]) for name, columns, of_sums in self.parts}

    def point(self) -> dict[str, float]:
        """Each metric (x100) on the whole sample."""
        whole = self.metrics_of(self.table.sum(axis=0, keepdims=True))
        return {name: float(values[0]) for name, values in whole.items()}


def task_metrics(task: Task) -> list[Metric]:
    return [metric(name) for name in task.metrics]


def units_of(examples: Sequence[Example]) -> np.ndarray:
    """The resampling unit of each example: its group (MuSeRC question) if it has one, else itself."""
    if not examples or examples[0].group is None:
        return np.arange(len(examples))
    codes: dict[Any, int] = {}
    return np.array([codes.setdefault(e.group, len(codes)) for e in examples])


def task_statistics(
    task: Task, examples: Sequence[Example], preds: Sequence[Any], units: np.ndarray | None = None
) -> TaskStatistics:
    """Per-example statistics whose sums give every metric of the task. A multilabel task (Ethics)
    scores each category as a binary task and averages the categories."""
    if not examples or len(examples) != len(preds):
        raise ValueError(f"{task.name}: {len(preds)} predictions for {len(examples)} examples")
    units = units_of(examples) if units is None else units
    golds = [e.label for e in examples]
    blocks, parts, width = [], [], 0
    for m in task_metrics(task):
        if task.kind == "multilabel":
            per_category = [_category(golds, preds, i, units) for i in range(len(task.categories))]
            stats = [m.statistics(outcomes) for outcomes in per_category]
            of_sums = _averaged(m.of_sums, [s.shape[1] for s in stats])
            stats_of_metric = np.hstack(stats)
        else:
            outcomes = Outcomes(golds, preds, task.labels, units, task.normalization)
            stats_of_metric, of_sums = m.statistics(outcomes), m.of_sums
        blocks.append(stats_of_metric)
        parts.append((m.name, slice(width, width + stats_of_metric.shape[1]), of_sums))
        width += stats_of_metric.shape[1]
    return TaskStatistics(np.hstack(blocks), tuple(parts))


def _category(golds: Sequence[Any], preds: Sequence[Any], i: int, units: np.ndarray) -> Outcomes:
    """One category of a multilabel task as a binary task."""
    return Outcomes([g[i] for g in golds], [p[i] for p in preds], (0, 1), units)


def _averaged(of_sums: OfSums, widths: list[int]) -> OfSums:
    """The mean over categories of a metric of each category's own columns."""
    edges = np.cumsum([0, *widths])

    def averaged(sums: np.ndarray) -> np.ndarray:
        return np.asarray(np.mean([of_sums(sums[:, start:end]) for start, end in zip(edges, edges[1:])], axis=0))

    return averaged


def score_task(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> Scores:
    """Every headline metric of the task, plus LiDiRus per-tag MCC, Ethics per-category scores and USE's
    per exam question."""
    if len(examples) != len(preds):
        raise ValueError(f"{task.name}: {len(preds)} predictions for {len(examples)} examples")
    metrics = task_statistics(task, examples, preds).point()
    if task.breakdown_by:
        return Scores(metrics, per_group(task, examples, preds))
    if task.kind == "multilabel":
        return Scores(metrics, _per_category(task, examples, preds))
    if task.tags:
        return Scores(metrics, lidirus_tag_mcc(examples, preds, task.tags))
    if GRADE_NORM.name in task.metrics:  # MERA's USE: grade_norm.task<N>
        return Scores(metrics, per_question([e.label for e in examples], preds))
    return Scores(metrics)


def _per_category(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Ethics: every metric on each category alone ("virtue", ...)."""
    golds, units = [e.label for e in examples], units_of(examples)
    categories = {
        category.split("_", 1)[-1]: _category(golds, preds, i, units) for i, category in enumerate(task.categories)
    }
    return {
        name: {m.name: 100 * m.value(outcomes) for m in task_metrics(task)} for name, outcomes in categories.items()
    }


def per_group(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Every metric on the examples of each value of the task's ``breakdown_by`` field, with their
    number "n" (MERA's acc.<domain>); a multilabel task's on each category there ("correct.virtue")."""
    members: dict[str, list[int]] = defaultdict(list)
    for i, example in enumerate(examples):
        members[str(example.fields.get(task.breakdown_by))].append(i)
    groups: dict[str, dict[str, float]] = {}
    for group, rows in sorted(members.items()):
        golds, predicted = [examples[i].label for i in rows], [preds[i] for i in rows]
        if task.kind == "multilabel":
            for c, category in enumerate(task.categories):
                outcomes = _category(golds, predicted, c, np.arange(len(rows)))
                groups[f"{group}.{category}"] = {m.name: 100 * m.value(outcomes) for m in task_metrics(task)}
                groups[f"{group}.{category}"]["n"] = len(rows)
        else:
            outcomes = Outcomes(golds, predicted, task.labels, None, task.normalization)
            groups[group] = {**{m.name: 100 * m.value(outcomes) for m in task_metrics(task)}, "n": len(rows)}
    return groups


def lidirus_tag_mcc(
    examples: Sequence[Example], preds: Sequence[Any], tag_fields: Sequence[str]
) -> dict[str, dict[str, float]]:
    """MCC on the examples carrying each feature tag: per tag field ("logic") and per value
    ("logic: Negation"). A field may hold several values separated by ';' or ','."""
    members: dict[str, list[int]] = defaultdict(list)
    for i, example in enumerate(examples):
        for tag_field in tag_fields:
            values = _tag_values(example.fields.get(tag_field))
            if values:
                members[tag_field].append(i)
            for value in values:
                members[f"{tag_field}: {value}"].append(i)
    return {
        tag: {
            MCC.name: 100 * MCC.value(Outcomes([examples[i].label for i in rows], [preds[i] for i in rows])),
            "n": len(rows),
        }
        for tag, rows in sorted(members.items())
    }


def _tag_values(value: Any) -> list[str]:
    if not isinstance(value, str):
        return []
    return list(dict.fromkeys(v.strip() for v in value.replace(",", ";").split(";") if v.strip()))


def is_correct(task: Task, gold: Any, prediction: Any) -> bool:
    """Whether one prediction is right: the gold class; every category of a multilabel example (one
    wrong category makes the example wrong); exact match with any gold answer for span tasks; full
    marks for MERA's USE and code tasks."""
    if isinstance(task.shape, Graded):  # MERA's USE and code tasks
        return full_marks(gold, prediction)
    if task.kind == "span":
        return any(exact_match(answer, prediction, task.normalization) for answer in gold)
    if task.kind == "multilabel":
        return tuple(prediction) == tuple(gold)
    return bool(prediction == gold)


def example_metric_names(task: Task) -> list[str]:
    """The registry names of the metrics ``example_metrics`` gives for the task's examples."""
    if task.kind == "span":
        return [m.name for m in task_metrics(task) if m.per_example is not None]
    return [ACCURACY.name]


def example_metrics(task: Task, gold: Any, prediction: Any) -> dict[str, float]:
    """One example's own metrics as a sample log records them, under lm-eval's names: a span task's
    metrics on this example (exact match and token F1 against the best gold answer); for other
    tasks whether the example is right, lm-eval's per-example acc (their F1 and MCC are metrics of
    the whole sample, and an Ethics example is right when all its categories are)."""
    if task.kind == "span":
        span_metrics = [(m.lm_eval_name, m.per_example) for m in task_metrics(task)]
        return {name: of(gold, prediction, task.normalization) for name, of in span_metrics if of is not None}
    return {ACCURACY.lm_eval_name: float(is_correct(task, gold, prediction))}


def rsg_total(task_scores: Mapping[str, float]) -> float | None:
    """RSG total: the mean of the nine task scores (Shavrina et al., 2020, Section 3.2).
    None unless every RSG task was scored: a partial mean is not the benchmark's number."""
    assert RSG.total is not None
    total = RSG.total.of({name: (score,) for name, score in task_scores.items()})
    return None if total is None else total[0]
