"""MERA's own scorers of its generative tasks, as MERA's harness computes them (MERA-Evaluation/MERA
at 9cf05b2), registered as metrics in rueval.scoring.metrics:

- USE (benchmark_tasks/use/utils.py): each answer graded by its question's type (``use_grade``),
  then ``grade_norm``: per exam variant the points scored over the points possible, averaged over
  the variants (``grade_statistics`` / ``grade_norm_of``);
- ruHumanEval and ruCodeEval (benchmark_tasks/ruhumaneval/utils.py): a sample passes when each test's
  result equals the expected one as text; pass@k is the unbiased estimator of Chen et al. (2021),
  1 - C(n-c, k) / C(n, k) over an item's n samples of which c pass (1 when n - c < k).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

_NOT_LETTERS = re.compile(r"[\d\W]+")
_SPECIAL_CHOICE = "16"  # USE's question 16: a point per right choice, less one per choice too many


def use_grade(answer: str, kind: str, id_task: str, prediction: str) -> int:
    """The points one USE answer scores, by its question's type."""
    if kind == "matching":  # a point per position right, none when the lengths differ
        given, expected = prediction.split(","), answer.split(",")
        return sum(g == e for g, e in zip(given, expected)) if len(given) == len(expected) else 0
    if kind == "text":  # the letters of the answer, lower-cased, one of the right answers
        return int(_NOT_LETTERS.sub("", prediction).lower() in answer.split(","))
    chosen, expected = prediction.split(","), answer.split(",")
    if id_task == _SPECIAL_CHOICE:
        padded: list[Any] = chosen + [None] * (len(expected) - len(chosen))  # MERA pads with a non-answer
        return max(0, len(set(expected) & set(padded)) - len(padded) + len(expected))
    return int(set(chosen) == set(expected))


def grade_statistics(golds: Sequence[Any], preds: Sequence[Any]) -> np.ndarray:
    """Per answer: its points and the points possible, in the columns of its exam variant (variants
    in order of first appearance); gold: [answer, type, id_task, variant, max points]."""
    variants = {variant: i for i, variant in enumerate(dict.fromkeys(gold[3] for gold in golds))}
    table = np.zeros((len(golds), 2 * len(variants)))
    for row, (gold, prediction) in enumerate(zip(golds, preds, strict=True)):
        answer, kind, id_task, variant, possible = gold
        column = variants[variant]
        table[row, column] = use_grade(answer, kind, id_task, str(prediction))
        table[row, len(variants) + column] = possible
    return table


def grade_norm_of(sums: np.ndarray) -> np.ndarray:
    """The mean over variants (those with points possible in the sample) of points over points possible."""
    k = sums.shape[1] // 2
    scored, possible = sums[:, :k], sums[:, k:]
    present = possible > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(present, scored / np.where(present, possible, 1), 0.0)
        return np.asarray(shares.sum(axis=1) / present.sum(axis=1))


def per_question(golds: Sequence[Any], preds: Sequence[Any]) -> dict[str, dict[str, float]]:
    """USE per exam question (MERA's grade_norm.task<N>): the mean over its answers of points over points
    possible (x100), and how many answers."""
    shares: dict[str, list[float]] = {}
    for (answer, kind, id_task, _, possible), prediction in zip(golds, preds, strict=True):
        shares.setdefault(f"task{id_task}", []).append(use_grade(answer, kind, id_task, str(prediction)) / possible)
    return {name: {"grade_norm": 100 * float(np.mean(values)), "n": len(values)} for name, values in shares.items()}


def passes(expected: Sequence[str], results: Any) -> bool:
    """Whether one sample's test results are the expected ones, each as text (MERA's check_solution)."""
    if not isinstance(results, list | tuple) or not 0 < len(results) == len(expected):
        return False
    return all(str(e) == str(r) for e, r in zip(expected, results, strict=True))


def full_marks(gold: Sequence[Any], prediction: Any) -> bool:
    """Whether an item is answered in full: a code item's every sample passes; a USE answer scores its
    question's points (gold: [answer, type, id_task, variant, max points])."""
    if isinstance(prediction, list | tuple):
        return bool(prediction) and all(passes(gold, results) for results in prediction)
    answer, kind, id_task, _, possible = gold
    return bool(use_grade(answer, kind, id_task, str(prediction)) == possible)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of n samples of which c pass."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at(k: int) -> Any:
    """One item's pass@k: gold its expected results, the prediction each sample's test results."""

    def per_item(expected: Sequence[str], samples: Any, normalization: str = "") -> float:
        if not isinstance(samples, list | tuple) or not samples:
            return 0.0
        return pass_at_k(len(samples), sum(passes(expected, results) for results in samples), k)

    return per_item
