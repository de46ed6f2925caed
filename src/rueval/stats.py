"""Uncertainty of scores: bootstrap confidence intervals and the paired bootstrap test.

A resample draws the evaluation units with replacement: examples, or for MuSeRC whole questions,
since its EM is per question. Every metric of rueval is a function of sums over units (confusion
counts, per-question correctness, per-answer F1), so each unit is reduced once to a row of such
statistics and a resample is a vector of draw counts: the statistics of 1000 resamples are one
matrix product: 1000 resamples of thousands of examples take a second or less.

The metric formulas below restate those of rueval.metrics on confusion counts (scikit-learn's
definitions: macro-F1 over the classes seen, MCC 0 when undefined, F1 0 without positives); a
test checks that on the full sample they reproduce ``score_task`` exactly.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rueval.metrics import SPAN_METRICS, score_task
from rueval.tasks import Example, Task

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
_BLOCK = 200  # resamples drawn at once, at most: bounds memory to 200 x units counts
_BLOCK_DRAWS = 2**19  # and to this many draws (4 MB a block), so a large split's resamples stay small

# per-unit statistics (units x columns) and the metrics (each an array over resamples) of their sums
MetricsOfSums = Callable[[np.ndarray], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Difference:
    """Run A minus run B on one metric, with its paired-bootstrap interval and p-value."""

    a: float
    b: float
    diff: float
    ci: tuple[float, float]
    p_value: float

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ci": list(self.ci)}


def units_of(examples: Sequence[Example]) -> np.ndarray:
    """The resampling unit of each example: its group (MuSeRC question) if it has one, else itself."""
    if not examples or examples[0].group is None:
        return np.arange(len(examples))
    codes: dict[Any, int] = {}
    return np.array([codes.setdefault(e.group, len(codes)) for e in examples])


def bootstrap_ci(
    task: Task,
    examples: Sequence[Example],
    preds: Sequence[Any],
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> dict[str, list[float]]:
    """Percentile bootstrap interval of every metric of the task and of its score (their mean),
    x100 like the metrics: {metric: [low, high]}."""
    unit = units_of(examples)
    stats, metrics_of = _statistics(task, examples, preds, unit)
    draws = _resampled_metrics(stats, metrics_of, unit, resamples, _rng(seed, task))
    return {name: _interval(values, confidence) for name, values in draws.items()}


def paired_bootstrap(
    task: Task,
    examples: Sequence[Example],
    preds_a: Sequence[Any],
    preds_b: Sequence[Any],
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> dict[str, Difference]:
    """A minus B for every metric and the score, both runs scored on the same resamples.

    The p-value is two-sided: twice the share of resamples whose difference falls on the far side of
    zero, counted with the usual +1 (Davison and Hinkley, 1997) so it is never 0; that is the smallest
    level at which the percentile interval of the difference excludes zero. Identical runs give 1.
    """
    unit = units_of(examples)
    stats_a, metrics_a = _statistics(task, examples, preds_a, unit)
    stats_b, metrics_b = _statistics(task, examples, preds_b, unit)
    width = stats_a.shape[1]

    def difference(sums: np.ndarray) -> dict[str, np.ndarray]:
        a, b = metrics_a(sums[:, :width]), metrics_b(sums[:, width:])
        return {name: a[name] - b[name] for name in a}

    stats = np.hstack([stats_a, stats_b])
    draws = _resampled_metrics(stats, difference, unit, resamples, _rng(seed, task))
    point_a, point_b = _point(task, examples, preds_a), _point(task, examples, preds_b)
    result = {}
    for name, diffs in draws.items():
        beyond = min(np.sum(diffs <= 0), np.sum(diffs >= 0))
        p_value = min(1.0, 2 * (int(beyond) + 1) / (len(diffs) + 1))
        low, high = _interval(diffs, confidence)
        a, b = point_a[name], point_b[name]
        result[name] = Difference(a, b, a - b, (low, high), p_value)
    return result


def _point(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> dict[str, float]:
    scores = score_task(task, examples, preds)
    return {**scores.metrics, "score": scores.score}


def _rng(seed: int, task: Task) -> np.random.Generator:
    """Seeded per task, so a task's interval does not depend on which tasks ran before it."""
    return np.random.default_rng([seed, zlib.crc32(task.name.encode())])


def _interval(values: np.ndarray, confidence: float) -> list[float]:
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return [float(low), float(high)]


def _resampled_metrics(
    stats: np.ndarray, metrics_of: MetricsOfSums, unit: np.ndarray, resamples: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Each metric on ``resamples`` bootstrap resamples of the units, plus "score" (their mean)."""
    units = int(unit.max()) + 1
    if units == len(unit):  # every example is its own unit (units_of numbers them in order): no copy
        unit_stats = stats
    else:
        unit_stats = np.zeros((units, stats.shape[1]))
        np.add.at(unit_stats, unit, stats)  # a unit's examples are drawn together: sum them once
    blocks: list[dict[str, np.ndarray]] = []
    # the draws of one generator in blocks of any size are the same numbers: the block only bounds memory
    per_block = max(1, min(_BLOCK, _BLOCK_DRAWS // units))
    for start in range(0, resamples, per_block):
        size = min(per_block, resamples - start)
        drawn = rng.integers(0, units, size=(size, units))
        # how often each unit was drawn in each resample, via one bincount over offset indices
        drawn += units * np.arange(size)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=size * units)
        blocks.append(metrics_of(counts.reshape(size, units) @ unit_stats))
    draws = {name: np.concatenate([block[name] for block in blocks]) for name in blocks[0]}
    draws["score"] = np.mean(list(draws.values()), axis=0)
    return draws


def _statistics(
    task: Task, examples: Sequence[Example], preds: Sequence[Any], unit: np.ndarray
) -> tuple[np.ndarray, MetricsOfSums]:
    """Per-example statistics (examples x columns) whose sums give every metric of the task."""
    if not examples or len(examples) != len(preds):
        raise ValueError(f"{task.name}: {len(preds)} predictions for {len(examples)} examples")
    if task.kind == "span":
        return _span_statistics(task, examples, preds)
    if task.kind == "multilabel":
        return _multilabel_statistics(task, examples, preds)
    return _classification_statistics(task, examples, preds, unit)


def _span_statistics(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> tuple[np.ndarray, MetricsOfSums]:
    per_example = [
        [SPAN_METRICS[m]([e.label], [p], task.normalization) for m in task.metrics]
        for e, p in zip(examples, preds, strict=True)
    ]
    stats = np.column_stack([np.ones(len(examples)), np.array(per_example)])

    def metrics_of(sums: np.ndarray) -> dict[str, np.ndarray]:
        return {m: 100 * sums[:, 1 + i] / sums[:, 0] for i, m in enumerate(task.metrics)}

    return stats, metrics_of


def _multilabel_statistics(
    task: Task, examples: Sequence[Example], preds: Sequence[Any]
) -> tuple[np.ndarray, MetricsOfSums]:
    """Per category a 2x2 confusion; the task's metrics are averaged over categories, as score_task does."""
    categories = len(task.categories)
    golds = np.array([e.label for e in examples], dtype=int).reshape(len(examples), categories)
    guesses = np.array(list(preds), dtype=int).reshape(len(examples), categories)
    cells = golds * 2 + guesses  # 0 = tn, 1 = fp, 2 = fn, 3 = tp
    stats = np.concatenate([np.eye(4)[cells[:, c]] for c in range(categories)], axis=1)

    def metrics_of(sums: np.ndarray) -> dict[str, np.ndarray]:
        per_category = [
            _confusion_metrics(task.metrics, sums[:, 4 * c : 4 * c + 4].reshape(-1, 2, 2), positive=1)
            for c in range(categories)
        ]
        return {m: np.mean([cat[m] for cat in per_category], axis=0) for m in task.metrics}

    return stats, metrics_of


def _classification_statistics(
    task: Task, examples: Sequence[Example], preds: Sequence[Any], unit: np.ndarray
) -> tuple[np.ndarray, MetricsOfSums]:
    """A one-hot confusion cell per example; for grouped EM also whether its whole unit is right."""
    classes = list(dict.fromkeys([*task.labels, *(e.label for e in examples), *preds]))
    code = {label: i for i, label in enumerate(classes)}
    k = len(classes)
    golds = np.array([code[e.label] for e in examples])
    guesses = np.array([code[p] for p in preds])
    confusion = np.eye(k * k)[golds * k + guesses]
    # A unit is right when none of its examples is wrong; its first example carries that flag, so a
    # unit counts once however many examples it has.
    wrong = np.zeros(int(unit.max()) + 1)
    np.add.at(wrong, unit, golds != guesses)
    first = np.zeros(len(unit))
    first[np.unique(unit, return_index=True)[1]] = 1
    unit_right = first * (wrong[unit] == 0)
    stats = np.column_stack([confusion, first, unit_right])
    positive = code.get(1, 0)  # "f1"/"f1a" is the F1 of class 1 (MuSeRC's answers marked true)

    def metrics_of(sums: np.ndarray) -> dict[str, np.ndarray]:
        values = _confusion_metrics(task.metrics, sums[:, : k * k].reshape(-1, k, k), positive)
        if "em" in task.metrics:  # units right over units drawn
            values["em"] = 100 * sums[:, k * k + 1] / sums[:, k * k]
        return values

    return stats, metrics_of


def _confusion_metrics(names: Sequence[str], confusion: np.ndarray, positive: int) -> dict[str, np.ndarray]:
    """Metrics x100 from confusion matrices (resamples x gold x predicted); "em" is left to the caller."""
    total = confusion.sum(axis=(1, 2))
    true = confusion.sum(axis=2)  # gold counts per class
    predicted = confusion.sum(axis=1)
    hits = np.diagonal(confusion, axis1=1, axis2=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(true + predicted > 0, 2 * hits / (true + predicted), 0.0)
        seen = (true + predicted) > 0
        correct = hits.sum(axis=1)
        covariance = correct * total - np.sum(true * predicted, axis=1)
        spread = (total**2 - np.sum(true**2, axis=1)) * (total**2 - np.sum(predicted**2, axis=1))
        values = {
            "accuracy": correct / total,
            "macro_f1": np.sum(f1 * seen, axis=1) / seen.sum(axis=1),
            "mcc": np.where(spread > 0, covariance / np.sqrt(np.where(spread > 0, spread, 1)), 0.0),
            "f1": f1[:, positive],
            "f1a": f1[:, positive],
        }
    return {name: 100 * values[name] for name in names if name != "em"}
