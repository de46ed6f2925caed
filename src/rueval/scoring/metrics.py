"""Every metric of rueval, registered once: the official metrics of RSG and TAPE.

A metric is a ``Metric`` record in ``METRICS``, under a name used by tasks (``Task.metrics``), results
files, reports and the leaderboards (its ``title``), the lm-eval export and the sample logs
(its ``lm_eval_name``). Its formula is written once, as sufficient statistics: each example gives a
row of numbers (confusion counts; a 1 and the example's own value) and the metric is a function of
their sums. The point value is that function of the whole sample's sums (``Metric.value``); the
bootstrap (rueval.scoring.stats) applies the same function to the sums of every resample at once. Tests check
each metric against scikit-learn's definitions and the official scorers'.

Values are fractions in [0, 1] (MCC in [-1, 1]); scoring (rueval.scoring.task_scores) scales them by 100, as
both papers print them.

Adding a metric is one ``register(...)`` call below: a mean over examples needs only its value on
one example (``mean_over_examples``); any other metric, its per-example statistics and the
function of their sums.
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import numpy as np

from rueval.core.errors import RuevalError
from rueval.scoring.mera_scorers import grade_norm_of, grade_statistics, pass_at

# ---- answer normalisation (span tasks) --------------------------------------------------------------

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
    kept: np.ndarray = codes[~deleted[codes]]
    return kept.tobytes().decode("utf-32-le", "surrogatepass")


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
    "record": squad_normalize,  # RuCoS, as RSG's ReCoRD-derived scorer
    "squad": squad_normalize,  # MultiQ, CheGeKa, as TAPE's SQuAD-style scoring
    "russian": normalize_answer,
    "exact": str,  # none: lm-eval's exact_match as MERA's task files set it (MERA's arithmetic)
}
# The scorers differ only when an answer has no token left: ReCoRD's F1 is then 0 (no overlap),
# SQuAD 2.0's and rueval's 1 if neither has a token.
_F1_WITHOUT_TOKENS_IS_ZERO = frozenset({"record"})


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
    """The official scorers' F1 of one answer against one gold answer, over their normalised tokens."""
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


# ---- the record and the registry ----------------------------------------------------------------------


@dataclass(frozen=True)
class Outcomes:
    """What a metric is computed on: each example's gold answer and prediction, in example order.

    ``labels``: the label space, so that every class has its column; ``units``: each example's
    resampling unit as a code 0, 1, ... (a MuSeRC question), None when every example is its own;
    ``normalization``: for answers, how they are normalised before matching (NORMALIZATIONS)."""

    golds: Sequence[Any]
    preds: Sequence[Any]
    labels: Sequence[Any] = ()
    units: np.ndarray | None = None
    normalization: str = ""

    def __post_init__(self) -> None:
        if len(self.golds) != len(self.preds):
            raise ValueError(f"{len(self.preds)} predictions for {len(self.golds)} gold answers")


Statistics = Callable[[Outcomes], np.ndarray]  # examples x columns
OfSums = Callable[[np.ndarray], np.ndarray]  # summed statistics (samples x columns) -> the metric per sample
PerExample = Callable[[Any, Any, str], float]  # (gold, prediction, normalization) -> one example's value


@dataclass(frozen=True)
class Metric:
    """One metric, declared once.

    ``name``: its key in tasks' declarations, results files and reports, one name per formula;
    ``title``: as the papers print it (leaderboard headers); ``lm_eval_name``: its key in
    lm-evaluation-harness's vocabulary (results_lmeval.json, sample logs), where F1 is "f1"
    whatever the task, as in lm-eval's own tasks. The formula: ``statistics`` gives each example's
    row of sufficient statistics, ``of_sums`` the metric of their sums for any number of samples at
    once (one per row). ``per_example``: for a mean over examples, one example's value (sample
    logs); None for a metric of the whole sample (F1, MCC)."""

    name: str
    title: str
    lm_eval_name: str
    description: str  # one line for the reference
    statistics: Statistics
    of_sums: OfSums
    per_example: PerExample | None = None
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        for text in ("name", "title", "lm_eval_name", "description"):
            if not getattr(self, text):
                raise ValueError(f"metric {self.name!r}: {text} is empty")

    def value(self, outcomes: Outcomes) -> float:
        """The metric on the whole sample: the function of its summed statistics."""
        return float(self.of_sums(self.statistics(outcomes).sum(axis=0, keepdims=True))[0])


_REGISTRY: dict[str, Metric] = {}
METRICS: Mapping[str, Metric] = _REGISTRY  # every metric by name, in registration order


def register(metric: Metric) -> Metric:
    """Make a metric known by its name; a name is registered once."""
    if metric.name in _REGISTRY:
        raise ValueError(f"metric {metric.name!r} is registered twice")
    _REGISTRY[metric.name] = metric
    return metric


def metric(name: str) -> Metric:
    """The metric of this name; a user error naming the known ones if there is none."""
    if name not in _REGISTRY:
        raise RuevalError(f"unknown metric {name!r}; expected one of: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


# ---- the formulas -------------------------------------------------------------------------------------


def mean_over_examples(name: str, title: str, lm_eval_name: str, description: str, per_example: PerExample) -> Metric:
    """A metric that is the mean of each example's value: its statistics are (1, value)."""

    def statistics(outcomes: Outcomes) -> np.ndarray:
        values = [per_example(g, p, outcomes.normalization) for g, p in zip(outcomes.golds, outcomes.preds)]
        return np.column_stack([np.ones(len(values)), np.array(values, dtype=float)])

    return Metric(name, title, lm_eval_name, description, statistics, _share, per_example)


def _share(sums: np.ndarray) -> np.ndarray:
    return np.asarray(sums[:, 1] / sums[:, 0])


def class_counts(outcomes: Outcomes) -> np.ndarray:
    """Per example, three one-hot blocks over the classes (the label space, then any other gold or
    predicted value): its gold class, its predicted class, and its gold class again if it is right.
    Summed: each class's gold count, predicted count and hits, all a multi-class metric needs."""
    code = {label: i for i, label in enumerate(dict.fromkeys([*outcomes.labels, *outcomes.golds, *outcomes.preds]))}
    golds = np.array([code[g] for g in outcomes.golds], dtype=int)
    preds = np.array([code[p] for p in outcomes.preds], dtype=int)
    one_hot = np.eye(len(code))
    return np.hstack([one_hot[golds], one_hot[preds], one_hot[golds] * (golds == preds)[:, None]])


def _per_class(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Summed class counts -> each class's gold count, predicted count and hits (samples x classes)."""
    k = sums.shape[1] // 3
    return sums[:, :k], sums[:, k : 2 * k], sums[:, 2 * k :]


def _f1(true: np.ndarray, predicted: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """A class's F1, 2 hits / (gold + predicted); 0 for a class neither in gold nor predicted
    (scikit-learn's zero_division=0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(true + predicted > 0, 2 * hits / (true + predicted), 0.0)


def _macro_f1_of(sums: np.ndarray) -> np.ndarray:
    """Unweighted mean of per-class F1 over the classes seen in gold or predictions (scikit-learn's)."""
    true, predicted, hits = _per_class(sums)
    seen = (true + predicted) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.sum(_f1(true, predicted, hits) * seen, axis=1) / seen.sum(axis=1))


def label_space_counts(outcomes: Outcomes) -> np.ndarray:
    """class_counts over the label space alone: a prediction outside it stands for no class (it is
    only a miss of its gold class)."""
    k = len(outcomes.labels)
    code = {label: i for i, label in enumerate(outcomes.labels)}
    one_hot = np.vstack([np.eye(k), np.zeros(k)])  # row k: outside the label space
    golds = np.array([code[g] for g in outcomes.golds], dtype=int)
    preds = np.array([code.get(p, k) for p in outcomes.preds], dtype=int)
    return np.hstack([one_hot[golds], one_hot[preds], one_hot[golds] * (golds == preds)[:, None]])


def _class_mean_f1_of(sums: np.ndarray) -> np.ndarray:
    """Unweighted mean of per-class F1 over every class of the label space, 0 for a class absent from
    gold and predictions (jiant's: CommitmentBankEvaluationScheme, RSG's RCBTask)."""
    return np.asarray(np.mean(_f1(*_per_class(sums)), axis=1))


def _mcc_of(sums: np.ndarray) -> np.ndarray:
    """Multi-class MCC from class counts (scikit-learn's formula); 0 where undefined (one class throughout)."""
    true, predicted, hits = _per_class(sums)
    total, correct = true.sum(axis=1), hits.sum(axis=1)
    covariance = correct * total - np.sum(true * predicted, axis=1)
    spread = (total**2 - np.sum(true**2, axis=1)) * (total**2 - np.sum(predicted**2, axis=1))
    return np.where(spread > 0, covariance / np.sqrt(np.where(spread > 0, spread, 1)), 0.0)


def _positive_counts(outcomes: Outcomes) -> np.ndarray:
    """Per example: gold is class 1, prediction is class 1, both (summed: F1's counts of the positive class)."""
    golds = np.array([g == 1 for g in outcomes.golds], dtype=float)
    preds = np.array([p == 1 for p in outcomes.preds], dtype=float)
    return np.column_stack([golds, preds, golds * preds])


def _positive_f1_of(sums: np.ndarray) -> np.ndarray:
    return _f1(sums[:, 0], sums[:, 1], sums[:, 2])


def _question_counts(outcomes: Outcomes) -> np.ndarray:
    """Per example: 1 on the first example of its unit (a question), and there 1 again if every
    example of the unit is right. Summed: questions, and questions answered right throughout."""
    units = np.arange(len(outcomes.golds)) if outcomes.units is None else np.asarray(outcomes.units)
    wrong = np.zeros(int(units.max(initial=-1)) + 1)
    np.add.at(wrong, units, [g != p for g, p in zip(outcomes.golds, outcomes.preds)])
    first = np.zeros(len(units))
    first[np.unique(units, return_index=True)[1]] = 1
    return np.column_stack([first, first * (wrong[units] == 0)])


def _best_exact_match(golds: Sequence[str], pred: str, normalization: str) -> float:
    return max(exact_match(gold, pred, normalization) for gold in golds)


def _best_token_f1(golds: Sequence[str], pred: str, normalization: str) -> float:
    return max(token_f1(gold, pred, normalization) for gold in golds)


def _right(gold: Any, pred: Any, normalization: str) -> float:
    return float(gold == pred)


ACCURACY = register(
    mean_over_examples("accuracy", "Acc", "acc", description="share of examples predicted right", per_example=_right)
)
MACRO_F1 = register(
    Metric(
        "macro_f1",
        "F1",
        "macro_f1",
        description="unweighted mean of per-class F1 over the classes seen in gold or predictions",
        statistics=class_counts,
        of_sums=_macro_f1_of,
    )
)
# RSG's RCB F1 (jiant's): like macro_f1 wherever every class occurs in gold or predictions; on a subset
# without one (a slice, --limit, a bootstrap resample) it counts that class's F1 as 0, where
# scikit-learn's macro average leaves the class out (up to 0.67 apart on 1-12 examples).
AVG_F1 = register(
    Metric(
        "avg_f1",
        "F1",
        "f1",
        description="mean of per-class F1 over every class of the label space, an absent class's 0 included (jiant)",
        statistics=label_space_counts,
        of_sums=_class_mean_f1_of,
    )
)
MCC = register(
    Metric(
        "mcc", "MCC", "mcc", description="Matthews correlation coefficient", statistics=class_counts, of_sums=_mcc_of
    )
)
BINARY_F1 = register(
    Metric(
        "binary_f1",
        "F1",
        "f1",
        description="F1 of the positive class 1 (TAPE's Ethics: per category, averaged)",
        statistics=_positive_counts,
        of_sums=_positive_f1_of,
    )
)
# MuSeRC's F1a: the same formula over all answer options, registered under its official name and title.
F1A = register(
    Metric(
        "f1a",
        "F1a",
        "f1a",
        description="F1 of the answer options marked true, over all options (MuSeRC)",
        statistics=_positive_counts,
        of_sums=_positive_f1_of,
    )
)
QUESTION_EM = register(
    Metric(
        "question_em",
        "EM",
        "exact_match",
        description="share of questions with every answer option labelled right (MuSeRC)",
        statistics=_question_counts,
        of_sums=_share,
    )
)
EXACT_MATCH = register(
    mean_over_examples(
        "exact_match",
        "EM",
        "exact_match",
        description="share of answers equal to a gold answer after normalisation",
        per_example=_best_exact_match,
    )
)
TOKEN_F1 = register(
    mean_over_examples(
        "token_f1",
        "F1",
        "f1",
        description="token F1 against the best-matching gold answer, averaged over questions",
        per_example=_best_token_f1,
    )
)

# ---- MERA's own scorers (rueval.scoring.mera_scorers) ----------------------------------------------

GRADE_NORM = register(
    Metric(
        "grade_norm",
        "Grade",
        "grade_norm",
        description="USE: points scored over points possible per exam variant, averaged over variants (MERA)",
        statistics=lambda outcomes: grade_statistics(outcomes.golds, outcomes.preds),
        of_sums=grade_norm_of,
    )
)
PASS_AT = {
    k: register(
        mean_over_examples(
            f"pass@{k}", f"pass@{k}", f"pass@{k}", f"unbiased pass@{k} of an item's samples, averaged", pass_at(k)
        )
    )
    for k in (1, 5, 10)
}
