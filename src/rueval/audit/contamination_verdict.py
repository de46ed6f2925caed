"""The task-level verdict of the contamination audit, and with known members each score's AUROC.

Each score's values on the task's items are tested against its values on the reference items with the
one-sided Mann-Whitney U test (scipy.stats.mannwhitneyu, alternative "greater" on the scores turned by
MEMBER_SIGN): the null hypothesis is that the items score no more like training texts than the reference
items. The task's verdict is its primary score's (Min-K%++ where the backend gives it, else Min-K%):
"evidence of contamination" when its p-value is below ALPHA, else "no evidence".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

import numpy as np

from rueval.audit.membership_scores import MEMBER_SIGN, SCORES
from rueval.results.contamination import EVIDENCE, NO_EVIDENCE, ItemScores, MembershipAUC, ScoreTest

ALPHA = 0.05
FPR = 0.05  # the false-positive rate at which the true-positive rate is reported
MIN_VALUES = 2  # the fewest values on each side for a test


def values_of(rows: Sequence[ItemScores], score: str) -> list[float]:
    """A score's values (those present and finite), turned so that higher means more like a member."""
    values = (row.value(score) for row in rows)
    return [MEMBER_SIGN[score] * v for v in values if v is not None and math.isfinite(v)]


def score_tests(items: Sequence[ItemScores], references: Sequence[ItemScores]) -> list[ScoreTest]:
    """The test of each score that both sides have enough values of."""
    from scipy.stats import mannwhitneyu

    tests = []
    for score in SCORES:
        own, other = values_of(items, score), values_of(references, score)
        if len(own) < MIN_VALUES or len(other) < MIN_VALUES:
            continue
        p = float(mannwhitneyu(own, other, alternative="greater").pvalue)
        sign = MEMBER_SIGN[score]  # medians as the score reads, not turned
        tests.append(ScoreTest(score, len(own), len(other), sign * median(own), sign * median(other), p, words(p)))
    return tests


def words(p_value: float) -> str:
    return EVIDENCE if p_value < ALPHA else NO_EVIDENCE


def primary_test(tests: Sequence[ScoreTest]) -> ScoreTest | None:
    """The test that gives the task's verdict: Min-K%++'s, else Min-K%'s."""
    by_score = {test.score: test for test in tests}
    return by_score.get("min_k_pp") or by_score.get("min_k")


def membership(rows: Sequence[ItemScores], members: set[str]) -> list[MembershipAUC]:
    """Each score's AUROC and TPR at FPR over the items, the known members the positives."""
    from sklearn.metrics import roc_auc_score, roc_curve

    found = []
    for score in SCORES:
        pairs = [(row.idx in members, MEMBER_SIGN[score] * v) for row in rows if (v := row.value(score)) is not None]
        pairs = [(label, value) for label, value in pairs if math.isfinite(value)]
        labels = [label for label, _ in pairs]
        if not any(labels) or all(labels):
            continue
        values = [value for _, value in pairs]
        fpr, tpr, _ = roc_curve(labels, values)
        at_fpr = float(np.max(tpr[fpr <= FPR]))
        auroc = float(roc_auc_score(labels, values))
        found.append(MembershipAUC(score, sum(labels), len(labels) - sum(labels), auroc, at_fpr))
    return found
