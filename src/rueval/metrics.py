"""The official metrics of RSG and TAPE, on scikit-learn where it has them.

Metric functions return fractions in [0, 1] (MCC in [-1, 1]); ``score_task`` scales them by
100, as both papers print them.
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from statistics import fmean
from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from rueval.errors import RuevalError
from rueval.tasks import BENCHMARKS, Example, Task


def accuracy(golds: Sequence[Any], preds: Sequence[Any]) -> float:
    return float(accuracy_score(golds, preds))


def macro_f1(golds: Sequence[Any], preds: Sequence[Any]) -> float:
    """Unweighted mean of per-class F1 over the classes seen in golds or predictions."""
    return float(f1_score(golds, preds, average="macro", zero_division=0))


def mcc(golds: Sequence[Any], preds: Sequence[Any]) -> float:
    if len({*golds, *preds}) < 2:  # one class throughout: no correlation to measure (sklearn's 0, unwarned)
        return 0.0
    return float(matthews_corrcoef(golds, preds))


def binary_f1(golds: Sequence[int], preds: Sequence[int]) -> float:
    """F1 of the positive class 1 (MuSeRC's F1a over all answer options)."""
    return float(f1_score(golds, preds, pos_label=1, average="binary", zero_division=0))


def grouped_exact_match(golds: Sequence[Any], preds: Sequence[Any], groups: Sequence[Any]) -> float:
    """Share of groups (MuSeRC questions) whose every member is predicted right."""
    right: dict[Any, bool] = {}
    for gold, pred, group in zip(golds, preds, groups, strict=True):
        right[group] = right.get(group, True) and gold == pred
    return fmean(right.values())


_ENGLISH_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_normalize(text: str) -> str:
    """The SQuAD/ReCoRD scorers' normalisation: lower case, ASCII punctuation deleted (« » — stay),
    the English articles a/an/the removed as words, spaces collapsed. RSG's RuCoS metric uses it
    (RussianNLP/RussianSuperGLUE, jiant-russian-v2/jiant/metrics/span_metrics.py, from the ReCoRD
    script), and so does TAPE's MultiQ/CheGeKa scoring (ai-forever/MERA, modules/scoring, through
    transformers' squad_metrics, from the SQuAD 2.0 script)."""
    text = _without(text.lower(), _marked(string.punctuation))
    return " ".join(_ENGLISH_ARTICLES.sub(" ", text).split())


def normalize_answer(text: str) -> str:
    """rueval's Russian-aware normalisation (opt-in, "russian"): the official one after ё -> е and with
    every Unicode punctuation mark deleted (« », —, … too), so "«Пётр»" matches "петр"."""
    text = text.replace("ё", "е").replace("Ё", "Е")
    return squad_normalize(_without(text, _unicode_punctuation()))


def _without(text: str, deleted: np.ndarray) -> str:
    """The text without the characters ``deleted`` marks: one table look-up per code point in numpy,
    where a Python loop or str.translate over Cyrillic text costs 20 times more."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return codes[~deleted[codes]].tobytes().decode("utf-32-le", "surrogatepass")


@cache
def _marked(characters: str) -> np.ndarray:
    """A table over all code points marking these characters."""
    table = np.zeros(sys.maxunicode + 1, dtype=bool)
    table[[ord(ch) for ch in characters]] = True
    return table


@cache
def _unicode_punctuation() -> np.ndarray:
    """A table over all code points marking Unicode punctuation (categories P*)."""
    return np.array([unicodedata.category(chr(c)).startswith("P") for c in range(sys.maxunicode + 1)])


# Answer normalisations by name (Task.normalization): the official ones and rueval's opt-in.
NORMALIZATIONS: dict[str, Callable[[str], str]] = {
    "rsg": squad_normalize,  # RuCoS, as RSG's ReCoRD-derived scorer
    "squad": squad_normalize,  # MultiQ, CheGeKa, as TAPE's SQuAD-style scoring
    "russian": normalize_answer,
}
# The scorers differ only when an answer has no token left: ReCoRD's F1 is then 0 (no overlap),
# SQuAD 2.0's and rueval's 1 if neither has a token.
_F1_WITHOUT_TOKENS_IS_ZERO = frozenset({"rsg"})


def normalizer(normalization: str) -> Callable[[str], str]:
    if normalization not in NORMALIZATIONS:
        raise RuevalError(
            f"unknown answer normalisation {normalization!r}; expected one of: {', '.join(NORMALIZATIONS)}"
        )
    return NORMALIZATIONS[normalization]


@lru_cache(maxsize=1 << 18)
def _normalized(text: str, normalization: str) -> str:
    """An answer normalised, kept: scoring meets the same gold answers and predictions many times
    (every rule the heuristics try, every episode)."""
    return normalizer(normalization)(text)


def token_f1(gold: str, pred: str, normalization: str = "russian") -> float:
    gold_tokens, pred_tokens = _normalized(gold, normalization).split(), _normalized(pred, normalization).split()
    if not gold_tokens or not pred_tokens:
        return 0.0 if normalization in _F1_WITHOUT_TOKENS_IS_ZERO else float(gold_tokens == pred_tokens)
    common = sum((Counter(gold_tokens) & Counter(pred_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(gold: str, pred: str, normalization: str = "russian") -> float:
    return float(_normalized(gold, normalization) == _normalized(pred, normalization))


def span_f1(golds: Sequence[Iterable[str]], preds: Sequence[str], normalization: str) -> float:
    """Token F1 against the best-matching gold answer, averaged over questions."""
    return fmean(max(token_f1(g, p, normalization) for g in gs) for gs, p in zip(golds, preds, strict=True))


def span_exact_match(golds: Sequence[Iterable[str]], preds: Sequence[str], normalization: str) -> float:
    return fmean(max(exact_match(g, p, normalization) for g in gs) for gs, p in zip(golds, preds, strict=True))


SPAN_METRICS: dict[str, Callable[[Sequence[Iterable[str]], Sequence[str], str], float]] = {
    "f1": span_f1,
    "em": span_exact_match,
}


def is_correct(task: Task, gold: Any, prediction: Any) -> bool:
    """Whether one prediction is right: the gold class; every category of a multilabel example (one
    wrong category makes the example wrong); exact match with any gold answer for span tasks."""
    if task.kind == "span":
        return any(exact_match(answer, prediction, task.normalization) for answer in gold)
    if task.kind == "multilabel":
        return tuple(prediction) == tuple(gold)
    return prediction == gold


@dataclass
class Scores:
    """A task's metrics (x100), their mean as the task score, and named sub-group breakdowns."""

    metrics: dict[str, float]
    breakdown: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return fmean(self.metrics.values())


def score_task(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> Scores:
    """Every headline metric of the task, plus LiDiRus per-tag MCC and Ethics per-category scores."""
    if len(examples) != len(preds):
        raise ValueError(f"{task.name}: {len(preds)} predictions for {len(examples)} examples")
    golds = [e.label for e in examples]
    if task.kind == "multilabel":
        per_category = {
            c.split("_", 1)[-1]: _classification_metrics(
                task.metrics, [g[i] for g in golds], [p[i] for p in preds], examples
            )
            for i, c in enumerate(task.categories)
        }
        metrics = {m: fmean(cat[m] for cat in per_category.values()) for m in task.metrics}
        return Scores(metrics, per_category)
    if task.kind == "span":
        return Scores({m: 100 * SPAN_METRICS[m](golds, preds, task.normalization) for m in task.metrics})
    scores = Scores(_classification_metrics(task.metrics, golds, preds, examples))
    if "tags" in task.extra:
        scores.breakdown = lidirus_tag_mcc(examples, preds, task.extra["tags"])
    return scores


def _classification_metrics(
    names: Sequence[str], golds: Sequence[Any], preds: Sequence[Any], examples: Sequence[Example]
) -> dict[str, float]:
    functions = {
        "accuracy": accuracy,
        "macro_f1": macro_f1,
        "mcc": mcc,
        "f1a": binary_f1,
        "f1": binary_f1,
        "em": lambda g, p: grouped_exact_match(g, p, [e.group for e in examples]),
    }
    return {name: 100 * functions[name](golds, preds) for name in names}


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
            "mcc": 100 * mcc([examples[i].label for i in rows], [preds[i] for i in rows]),
            "n": len(rows),
        }
        for tag, rows in sorted(members.items())
    }


def _tag_values(value: Any) -> list[str]:
    if not isinstance(value, str):
        return []
    return list(dict.fromkeys(v.strip() for v in value.replace(",", ";").split(";") if v.strip()))


def rsg_total(task_scores: Mapping[str, float]) -> float | None:
    """RSG total: the mean of the nine task scores (Shavrina et al., 2020, Section 3.2).
    None unless every RSG task was scored: a partial mean is not the benchmark's number."""
    names = [task.name for task in BENCHMARKS["rsg"]]
    if not all(name in task_scores for name in names):
        return None
    return fmean(task_scores[name] for name in names)
