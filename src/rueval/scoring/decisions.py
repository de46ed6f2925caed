"""Decision statistics: whether a difference between two runs is beyond chance, and how many items a test
set needs to show one.

- McNemar's exact test on paired right/wrong outcomes: under "no difference" each discordant item (one
  run right, the other wrong) is a fair coin, so the p-value is the two-sided binomial test of one run's
  discordant count among all discordant items (scipy's ``binomtest``).
- Holm's step-down correction of several p-values (Holm, 1979), for a leader compared with every other
  entry at once.
- The standard error of a mean clustered by item, for runs that score an item several times (few-shot
  episodes, prompts): the cluster-robust (CRV1) variance of a mean, sum over items of (the item's summed
  deviations from the mean)^2 / N^2, times the small-sample factor G / (G - 1) for G items. This is how
  Inspect's ``stderr(cluster=...)`` computes it (Miller, 2024, "Adding error bars to evals", Appendix A,
  with Inspect's finite-cluster factor), and statsmodels' ``cov_type="cluster"`` for a regression on a
  constant: its factor G / (G - 1) * (N - 1) / (N - K) is G / (G - 1) when K = 1.
- The minimum detectable effect of a paired comparison of proportions at 80% power, by the normal
  approximation behind McNemar's sample size (Connor, 1987, "Sample size for testing differences in
  proportions for the paired-sample design", Biometrics 43(1): 207-211):

      n = (z_{1-a/2} sqrt(p_d) + z_{1-b} sqrt(p_d - d^2))^2 / d^2

  with p_d the discordance (the share of items on which the two runs disagree) and d the difference of
  the two proportions. ``items_needed`` is this n; ``minimum_detectable_effect`` solves it for d:

      d = sqrt(p_d) (z_{1-a/2} sqrt(n) + z_{1-b} sqrt(n + z_{1-b}^2 - z_{1-a/2}^2)) / (n + z_{1-b}^2).

Proportions and differences here are fractions (0.03); callers show them as points (x100).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import binomtest, norm

from rueval.scoring.metrics import metric
from rueval.scoring.stats import Difference, PairedDraws, difference_of, score_difference
from rueval.tasks import Example, Task, Total

ALPHA = 0.05  # two-sided significance level of every test and power figure
POWER = 0.80
# The discordance `rueval power` assumes unless told: two runs of 50% accuracy whose errors are independent
# disagree on 2 * 0.5 * 0.5 of the items, the most independent errors give. Runs that err alike disagree
# less, so this is the conservative figure (the most items); `rueval compare` shows a pair's own.
DEFAULT_DISCORDANCE = 0.5
MCNEMAR, BOOTSTRAP = "McNemar exact", "paired bootstrap"


@dataclass(frozen=True)
class PairedOutcomes:
    """Two runs' right/wrong outcomes on the same items: how many, and on how many only one run is right."""

    n: int
    a_only: int  # A right, B wrong
    b_only: int  # B right, A wrong

    @property
    def discordance(self) -> float:
        return (self.a_only + self.b_only) / self.n

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.a_only, self.b_only)

    def minimum_detectable_effect(self) -> float | None:
        """At this n and the pair's own discordance; None when the runs never disagree."""
        return minimum_detectable_effect(self.n, self.discordance) if self.discordance else None


def paired_outcomes(a: Sequence[float], b: Sequence[float]) -> PairedOutcomes:
    """The discordant counts of two runs' 0/1 outcomes, item by item."""
    right_a, right_b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if right_a.shape != right_b.shape or not right_a.size:
        raise ValueError(f"{right_a.size} and {right_b.size} outcomes: expected as many, at least one")
    return PairedOutcomes(int(right_a.size), int(np.sum(right_a & ~right_b)), int(np.sum(right_b & ~right_a)))


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """McNemar's exact two-sided p-value from the two discordant counts; 1 when there are none."""
    discordant = a_only + b_only
    return 1.0 if discordant == 0 else float(binomtest(a_only, discordant, 0.5).pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the given order: the i-th smallest times (m - i + 1), made
    non-decreasing along the sorted order, at most 1."""
    values = np.asarray(p_values, dtype=float)
    order = np.argsort(values, kind="stable")
    scaled = values[order] * (len(values) - np.arange(len(values)))
    adjusted = np.empty_like(values)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return [float(p) for p in adjusted]


def clustered_standard_error(values: Sequence[float], clusters: Sequence[Any]) -> float:
    """The standard error of the mean of ``values``, clustered by ``clusters`` (CRV1 with G / (G - 1))."""
    scores = np.asarray(values, dtype=float)
    codes: dict[Any, int] = {}
    cluster = np.array([codes.setdefault(c, len(codes)) for c in clusters], dtype=int)
    groups = len(codes)
    if groups < 2 or len(cluster) != scores.size:
        raise ValueError(f"{scores.size} values in {groups} clusters: expected a cluster per value, two or more")
    summed = np.bincount(cluster, weights=scores - scores.mean())
    return float(math.sqrt(np.sum(summed**2) * groups / (groups - 1)) / scores.size)


def naive_standard_error(values: Sequence[float]) -> float:
    """The standard error of the mean of ``values`` taken as independent (sample standard deviation / sqrt n)."""
    scores = np.asarray(values, dtype=float)
    return float(scores.std(ddof=1) / math.sqrt(scores.size))


def _z(alpha: float, power: float) -> tuple[float, float]:
    return float(norm.ppf(1 - alpha / 2)), float(norm.ppf(power))


def minimum_detectable_effect(n: int, discordance: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest difference of two paired proportions that n items show at ``power`` (Connor's formula
    solved for d); None when that difference would exceed the discordance itself, which bounds any
    difference: the items are too few to show one."""
    if n < 1 or not 0 < discordance <= 1:
        raise ValueError(f"n {n}, discordance {discordance}: expected n >= 1 and a discordance in (0, 1]")
    z_a, z_b = _z(alpha, power)
    inside = n + z_b**2 - z_a**2
    if inside < 0:
        return None
    d = math.sqrt(discordance) * (z_a * math.sqrt(n) + z_b * math.sqrt(inside)) / (n + z_b**2)
    return d if d <= discordance else None


def items_needed(delta: float, discordance: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """How many paired items show a difference ``delta`` of two proportions at ``power`` (Connor's n,
    rounded up)."""
    if not 0 < delta <= discordance <= 1:
        raise ValueError(
            f"difference {delta:g}, discordance {discordance:g}: expected 0 < difference <= discordance <= 1"
        )
    z_a, z_b = _z(alpha, power)
    n = (z_a * math.sqrt(discordance) + z_b * math.sqrt(discordance - delta**2)) ** 2 / delta**2
    return math.ceil(n - 1e-9)  # a whole n computed as n + rounding error is not one more item


def binary_outcomes(
    task: Task, examples: Sequence[Example], preds: Sequence[Any], metric_name: str
) -> list[float] | None:
    """Each example's value of a metric that is a mean over examples, when every value is 0 or 1 (accuracy,
    exact match): the outcomes McNemar's test pairs. None for other metrics (F1, MCC), for a multilabel
    task (its metrics average categories) and for examples scored in groups (MuSeRC's questions)."""
    per_example = metric(metric_name).per_example
    if per_example is None or task.kind == "multilabel" or any(e.group is not None for e in examples):
        return None
    values = [per_example(e.label, p, task.normalization) for e, p in zip(examples, preds, strict=True)]
    return values if all(v in (0, 1) for v in values) else None


@dataclass(frozen=True)
class Decision:
    """A minus B of one metric: the paired-bootstrap difference and interval, and the p-value of the paired
    test that fits the metric: McNemar's exact test where each item is right or wrong (its discordant counts
    in ``outcomes``), else the paired bootstrap's own."""

    difference: Difference
    outcomes: PairedOutcomes | None = None

    @property
    def test(self) -> str:
        return BOOTSTRAP if self.outcomes is None else MCNEMAR

    @property
    def p_value(self) -> float:
        return self.difference.p_value if self.outcomes is None else self.outcomes.p_value

    def as_dict(self) -> dict[str, Any]:
        decided = {**self.difference.as_dict(), "test": self.test, "p_value": self.p_value}
        if self.outcomes is not None:
            decided["discordant"] = [self.outcomes.a_only, self.outcomes.b_only]
        return decided


def decide(difference: Difference, values_a: Sequence[float] | None, values_b: Sequence[float] | None) -> Decision:
    """The decision on a difference, by McNemar's test when both runs' per-item values are all 0 or 1."""
    if values_a is None or values_b is None or not all(v in (0, 1) for v in (*values_a, *values_b)):
        return Decision(difference)
    return Decision(difference, paired_outcomes(values_a, values_b))


def score_p_value(
    task: Task, examples: Sequence[Example], preds_a: Sequence[Any], preds_b: Sequence[Any], paired: PairedDraws
) -> float:
    """The p-value of A's task score minus B's (``paired``: their draws on these examples): McNemar's where the
    score is one metric whose every item is right or wrong, else the paired bootstrap's of the score (the
    metrics' mean)."""
    if len(task.metrics) == 1:
        outcomes = [binary_outcomes(task, examples, preds, task.metrics[0]) for preds in (preds_a, preds_b)]
        if outcomes[0] is not None and outcomes[1] is not None:
            return paired_outcomes(outcomes[0], outcomes[1]).p_value
    return score_difference(paired).p_value


def total_difference(total: Total, paired: Sequence[tuple[Task, PairedDraws]]) -> Difference:
    """A minus B of a benchmark's total (its first column), with the paired-bootstrap interval and p-value: the
    total computed on each of the resamples its tasks' paired draws share, each task resampled over its own
    items, both runs on the same resamples."""

    def total_of(run: int, resample: int | None) -> float:
        """Run A's (0) or B's (1) total on one resample, or on the whole sample (None)."""
        values = {
            task.name: [
                (draws.a, draws.b)[run][m] if resample is None else float(draws.draws[m][resample, run])
                for m in task.metrics
            ]
            for task, draws in paired
        }
        found = total.of(values)
        if found is None:
            raise ValueError(f"the total needs {', '.join(total.tasks)}; paired: {', '.join(values)}")
        return found[0]

    resamples = len(next(iter(paired[0][1].draws.values())))
    diffs = np.array([total_of(0, r) - total_of(1, r) for r in range(resamples)])
    return difference_of(total_of(0, None), total_of(1, None), diffs)


def tied_with_leader(p_values: Sequence[float]) -> list[bool]:
    """Which entries the leader, compared with each of them, does not beat beyond chance: Holm-adjusted p >= ALPHA."""
    return [p >= ALPHA for p in holm(p_values)] if p_values else []
