"""Uncertainty of scores: bootstrap confidence intervals and the paired bootstrap test.

A resample draws the evaluation units with replacement: examples, or for MuSeRC whole questions,
since its EM is per question. Every metric of rueval is a function of sums of per-example
statistics (rueval.scoring.metrics), so each unit is reduced once to a row of such statistics and a
resample is a vector of draw counts: the statistics of 1000 resamples are one matrix product, and
each metric is the same function of them that gives the point value on the whole sample. 1000
resamples of thousands of examples take a second or less.

A task file's metrics are another library's (lm-eval's): their per-item values are resampled as they
are, a mean by indexing, any other aggregation (F1 over the pairs, BLEU over the corpus) by applying
that library's own function to each resample.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rueval.core.errors import RuevalError
from rueval.scoring.task_scores import Scores, task_statistics, units_of
from rueval.tasks import Example, Task

DEFAULT_RESAMPLES = 1000
MAX_RESAMPLES = 100_000  # far beyond the usual 1,000-10,000: keeps a mistyped number from running for days
SEED_MAX = 2**32 - 1  # the seed of every random choice: numpy's legacy generator and most libraries take below 2^32
DEFAULT_CONFIDENCE = 0.95
_BLOCK = 200  # resamples drawn at once, at most: bounds memory to 200 x units counts
_BLOCK_DRAWS = 2**19  # and to this many draws (4 MB a block), so a large split's resamples stay small

# per-unit statistics (units x columns) and the metrics (each an array over resamples) of their sums
MetricsOfSums = Callable[[np.ndarray], dict[str, np.ndarray]]
# a metric of per-item values, as another library aggregates them (lm-eval's f1, mcc, bleu): a fraction
Aggregate = Callable[[list[Any]], float]


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


@dataclass(frozen=True)
class PairedDraws:
    """Two runs' metrics (x100) on the whole sample, and on the same resamples: {metric: resamples x 2 (A, B)}."""

    a: dict[str, float]
    b: dict[str, float]
    draws: dict[str, np.ndarray]


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
    stats = task_statistics(task, examples, preds, unit)
    draws = _resampled_metrics(stats.table, stats.metrics_of, unit, resamples, _rng(seed, task))
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
    paired = paired_draws(task, examples, preds_a, preds_b, resamples, seed)
    found = {
        name: difference_of(paired.a[name], paired.b[name], pair[:, 0] - pair[:, 1], confidence)
        for name, pair in paired.draws.items()
    }
    return {**found, "score": score_difference(paired, confidence)}


def score_difference(paired: PairedDraws, confidence: float = DEFAULT_CONFIDENCE) -> Difference:
    """A minus B of the task score (its metrics' mean) on two runs' paired draws."""
    diffs = np.mean([pair[:, 0] - pair[:, 1] for pair in paired.draws.values()], axis=0)
    return difference_of(_point(paired.a)["score"], _point(paired.b)["score"], diffs, confidence)


def paired_draws(
    task: Task,
    examples: Sequence[Example],
    preds_a: Sequence[Any],
    preds_b: Sequence[Any],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedDraws:
    """Every metric of A and of B on the whole sample and on the same resamples."""
    unit = units_of(examples)
    stats_a, stats_b = task_statistics(task, examples, preds_a, unit), task_statistics(task, examples, preds_b, unit)
    width = stats_a.table.shape[1]

    def both(sums: np.ndarray) -> dict[str, np.ndarray]:
        a, b = stats_a.metrics_of(sums[:, :width]), stats_b.metrics_of(sums[:, width:])
        return {name: np.column_stack([a[name], b[name]]) for name in a}

    stats = np.hstack([stats_a.table, stats_b.table])
    draws = _resampled(stats, both, unit, resamples, _rng(seed, task))
    return PairedDraws(stats_a.point(), stats_b.point(), draws)


def item_bootstrap_ci(
    items: Sequence[Any],
    aggregate: Aggregate | None,
    name: str,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> list[float]:
    """Percentile bootstrap interval, x100, of a metric of per-item values: their mean (``aggregate`` None:
    the values are numbers), or ``aggregate`` applied to each resample of the items. ``name`` (the task's)
    seeds the draws with ``seed``, so every metric of a task is computed on the same resamples."""
    return _interval(_item_draws(items, aggregate, resamples, _seeded(seed, name)), confidence)


def paired_item_bootstrap(
    a: float,
    b: float,
    items_a: Sequence[Any],
    items_b: Sequence[Any],
    aggregate: Aggregate | None,
    name: str,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Difference:
    """A minus B of a metric (``a`` and ``b``, x100, as each run scored it) with the interval and p-value of
    paired_bootstrap, over the per-item values paired by position, both runs on the same resamples."""
    draws_a = _item_draws(items_a, aggregate, resamples, _seeded(seed, name))
    draws_b = _item_draws(items_b, aggregate, resamples, _seeded(seed, name))
    return difference_of(a, b, draws_a - draws_b, confidence)


def is_seed(value: object) -> bool:
    """A whole number from 0 to SEED_MAX (bool is not a number here)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= SEED_MAX


def check_seed(seed: object) -> None:
    if not is_seed(seed):
        raise RuevalError(f"--seed {seed}: expected a whole number from 0 to {SEED_MAX}")


def check_bootstrap(resamples: object, seed: object) -> None:
    """A bootstrap's resamples and seed as a user gives them (`rueval compare`), checked before any work."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or not 1 <= resamples <= MAX_RESAMPLES:
        raise RuevalError(f"--resamples {resamples}: expected a whole number from 1 to {MAX_RESAMPLES:,}")
    check_seed(seed)


def difference_of(a: float, b: float, diffs: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> Difference:
    """A minus B with the percentile interval of the resampled differences and their two-sided p-value."""
    beyond = min(np.sum(diffs <= 0), np.sum(diffs >= 0))
    p_value = min(1.0, 2 * (int(beyond) + 1) / (len(diffs) + 1))
    low, high = _interval(diffs, confidence)
    return Difference(a, b, a - b, (low, high), p_value)


def _item_draws(
    items: Sequence[Any], aggregate: Aggregate | None, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """The metric (x100) on each resample of the items, drawn as _resampled_metrics draws its units."""
    count = len(items)
    values = np.asarray(items, dtype=float) if aggregate is None else None
    per_block = max(1, min(_BLOCK, _BLOCK_DRAWS // count))
    draws = []
    for start in range(0, resamples, per_block):
        drawn = rng.integers(0, count, size=(min(per_block, resamples - start), count))
        if aggregate is None:
            draws.append(np.asarray(values)[drawn].mean(axis=1))
        else:
            draws.append(np.array([float(aggregate(list(map(items.__getitem__, row)))) for row in drawn]))
    return 100 * np.concatenate(draws)


def _point(metrics: dict[str, float]) -> dict[str, float]:
    """The metrics and the task score on the whole sample, as score_task gives them."""
    return {**metrics, "score": Scores(metrics).score}


def _rng(seed: int, task: Task) -> np.random.Generator:
    return _seeded(seed, task.name)


def _seeded(seed: int, task: str) -> np.random.Generator:
    """Seeded per task, so a task's interval does not depend on which tasks ran before it."""
    return np.random.default_rng([seed, zlib.crc32(task.encode())])


def _interval(values: np.ndarray, confidence: float) -> list[float]:
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return [float(low), float(high)]


def _resampled_metrics(
    stats: np.ndarray, metrics_of: MetricsOfSums, unit: np.ndarray, resamples: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Each metric on ``resamples`` bootstrap resamples of the units, plus "score" (their mean)."""
    draws = _resampled(stats, metrics_of, unit, resamples, rng)
    draws["score"] = np.mean(list(draws.values()), axis=0)
    return draws


def _resampled(
    stats: np.ndarray, metrics_of: MetricsOfSums, unit: np.ndarray, resamples: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """What ``metrics_of`` gives on ``resamples`` bootstrap resamples of the units, block after block."""
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
    return {name: np.concatenate([block[name] for block in blocks]) for name in blocks[0]}
