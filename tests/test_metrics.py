import math
import random

import pytest
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from rueval.metrics import (
    accuracy,
    binary_f1,
    grouped_exact_match,
    macro_f1,
    mcc,
    normalize_answer,
    rsg_total,
    score_task,
    span_exact_match,
    span_f1,
    token_f1,
)
from rueval.tasks import Example, get_task

E, N, C = "entailment", "neutral", "contradiction"


def test_hand_computed_classification_metrics():
    assert accuracy([E, N, E, E], [E, E, E, N]) == 0.5
    # entailment: P=1/2 R=1/2 F1=1/2; neutral: P=1/2 R=1 F1=2/3; contradiction: F1=0
    assert macro_f1([E, E, N, C], [E, N, N, E]) == pytest.approx((0.5 + 2 / 3 + 0) / 3)
    # TP=1 TN=2 FP=0 FN=1
    assert mcc([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(2 / math.sqrt(12))
    # TP=2 FP=1 FN=1
    assert binary_f1([1, 0, 1, 1], [1, 1, 0, 1]) == pytest.approx(2 / 3)
    assert mcc([1, 0, 1, 0], [1, 1, 1, 1]) == 0.0  # a constant prediction carries no signal


def test_grouped_exact_match_needs_every_answer_of_a_question():
    golds, preds = [1, 0, 1, 0, 1], [1, 0, 0, 0, 1]
    groups = ["q1", "q1", "q2", "q2", "q3"]
    assert grouped_exact_match(golds, preds, groups) == pytest.approx(2 / 3)


def test_russian_answer_normalisation():
    assert normalize_answer("  Ёлка, «Москва»! ") == "елка москва"
    assert normalize_answer("Санкт-Петербург") == "санктпетербург"  # deleted, as the SQuAD scorer does
    assert normalize_answer("Москва — столица") == "москва столица"
    assert exact_pairs_equal("Пётр I", "петр i")


def exact_pairs_equal(a, b):
    return span_exact_match([(a,)], [b]) == 1.0


def test_token_f1_and_span_scores_take_the_best_gold():
    assert token_f1("Рустам Эмомали", "эмомали") == pytest.approx(2 / 3)  # P=1, R=1/2
    assert token_f1("Москва", "Казань") == 0.0
    assert token_f1("", "") == 1.0
    golds = [("Москва", "город Москва"), ("1930",)]
    preds = ["Город москва", "1931"]
    assert span_f1(golds, preds) == pytest.approx(0.5)
    assert span_exact_match(golds, preds) == pytest.approx(0.5)


def _examples(golds, groups=None, **fields):
    return [
        Example(idx=i, fields=fields, label=g, group=None if groups is None else groups[i]) for i, g in enumerate(golds)
    ]


@pytest.mark.parametrize("seed", range(20))
def test_task_scores_agree_with_sklearn_on_random_inputs(seed):
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    labels = get_task("rcb").labels
    golds, preds = [rng.choice(labels) for _ in range(n)], [rng.choice(labels) for _ in range(n)]
    scores = score_task(get_task("rcb"), _examples(golds), preds).metrics
    assert scores["accuracy"] == pytest.approx(100 * accuracy_score(golds, preds))
    assert scores["macro_f1"] == pytest.approx(100 * f1_score(golds, preds, average="macro", zero_division=0))

    golds, preds = [rng.randint(0, 1) for _ in range(n)], [rng.randint(0, 1) for _ in range(n)]
    groups = sorted(rng.randint(0, n // 3) for _ in range(n))
    muserc = score_task(get_task("muserc"), _examples(golds, groups), preds).metrics
    assert muserc["f1a"] == pytest.approx(100 * f1_score(golds, preds, zero_division=0))
    by_group = {}
    for g, p, q in zip(golds, preds, groups):
        by_group.setdefault(q, []).append(g == p)
    assert muserc["em"] == pytest.approx(100 * sum(all(v) for v in by_group.values()) / len(by_group))

    golds = [rng.choice(["entailment", "not_entailment"]) for _ in range(n)]
    preds = [rng.choice(["entailment", "not_entailment"]) for _ in range(n)]
    lidirus = score_task(get_task("lidirus"), _examples(golds), preds).metrics
    assert lidirus["mcc"] == pytest.approx(100 * matthews_corrcoef(golds, preds))

    golds = [tuple(rng.randint(0, 1) for _ in range(5)) for _ in range(n)]
    preds = [tuple(rng.randint(0, 1) for _ in range(5)) for _ in range(n)]
    ethics = score_task(get_task("sit_ethics"), _examples(golds), preds)
    columns = [([g[i] for g in golds], [p[i] for p in preds]) for i in range(5)]
    assert ethics.metrics["f1"] == pytest.approx(100 * sum(f1_score(g, p, zero_division=0) for g, p in columns) / 5)
    assert ethics.metrics["accuracy"] == pytest.approx(100 * sum(accuracy_score(g, p) for g, p in columns) / 5)
    assert set(ethics.breakdown) == {"virtue", "moral", "law", "justice", "util"}
    assert ethics.breakdown["law"]["accuracy"] == pytest.approx(100 * accuracy_score(*columns[2]))


def test_lidirus_mcc_per_feature_tag():
    rows = [
        ("entailment", "entailment", "Negation"),
        ("not_entailment", "not_entailment", "Negation; Conjunction"),
        ("entailment", "not_entailment", "Conjunction"),
        ("not_entailment", "entailment", "Conjunction"),
        ("entailment", "entailment", ""),
    ]
    examples = [Example(idx=i, fields={"logic": tag, "knowledge": ""}, label=g) for i, (g, _, tag) in enumerate(rows)]
    preds = [p for _, p, _ in rows]
    breakdown = score_task(get_task("lidirus"), examples, preds).breakdown
    assert breakdown["logic"]["n"] == 4
    assert breakdown["logic: Negation"] == {"mcc": pytest.approx(100.0), "n": 2}
    conj = [1, 2, 3]
    assert breakdown["logic: Conjunction"]["mcc"] == pytest.approx(
        100 * matthews_corrcoef([rows[i][0] for i in conj], [rows[i][1] for i in conj])
    )
    assert "knowledge" not in breakdown  # empty tags select nothing


def test_span_task_scores_use_max_over_gold_answers():
    task = get_task("rucos")
    examples = [
        Example(idx=(0, 0), fields={}, label=("Путин", "Владимир Путин")),
        Example(idx=(1, 1), fields={}, label=("ТАСС",)),
    ]
    scores = score_task(task, examples, ["владимир путин", "РИА"])
    assert scores.metrics == {"f1": pytest.approx(50.0), "em": pytest.approx(50.0)}


def test_rsg_total_reproduces_the_papers_averages():
    # Shavrina et al. (2020), Table 2, RuBERT column: per-task metrics; "Average" 0.546.
    rubert = {
        "lidirus": [0.186],
        "rcb": [0.432, 0.468],
        "parus": [0.61],
        "muserc": [0.656, 0.256],
        "terra": [0.639],
        "russe": [0.894],
        "rwsd": [0.675],
        "danetqa": [0.749],
        "rucos": [0.255, 0.251],
    }
    scores = {task: 100 * sum(values) / len(values) for task, values in rubert.items()}
    assert rsg_total(scores) == pytest.approx(54.6, abs=0.05)
    # Iazykova et al. (2021), Table 8, majority-class column: "Total" 0.374.
    majority = {
        "lidirus": [0.0],
        "rcb": [0.217, 0.484],
        "parus": [0.498],
        "muserc": [0.0, 0.0],
        "terra": [0.513],
        "russe": [0.587],
        "rwsd": [0.669],
        "danetqa": [0.503],
        "rucos": [0.25, 0.247],
    }
    scores = {task: 100 * sum(values) / len(values) for task, values in majority.items()}
    assert rsg_total(scores) == pytest.approx(37.4, abs=0.05)
    del scores["rucos"]
    assert rsg_total(scores) is None


def test_tape_f1_definitions_match_the_papers_linear_baseline():
    """TAPE Table 3 (Taktasheva et al., 2022): a constant-negative Linear baseline scores Winograd
    36.7 F1 / 58.0 acc and Ethics-1 0.0 F1. That is macro-F1 for Winograd and positive-class F1
    per Ethics category, which is what rueval computes."""
    winograd = [0] * 58 + [1] * 42
    scores = score_task(get_task("winograd"), _examples(winograd), [0] * 100).metrics
    assert scores["macro_f1"] == pytest.approx(36.7, abs=0.05)
    assert scores["accuracy"] == pytest.approx(58.0)
    ethics = [(1, 0, 0, 1, 0), (0, 0, 1, 0, 0), (0, 1, 0, 0, 1)]
    assert score_task(get_task("sit_ethics"), _examples(ethics), [(0,) * 5] * 3).metrics["f1"] == 0.0
