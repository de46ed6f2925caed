import dataclasses
import itertools
import math
import random
import re
import string

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from rueval.core.errors import RuevalError
from rueval.scoring.metrics import (
    ACCURACY,
    BINARY_F1,
    EXACT_MATCH,
    MACRO_F1,
    MCC,
    NORMALIZATIONS,
    QUESTION_EM,
    TOKEN_F1,
    Outcomes,
    exact_match,
    normalize_answer,
    squad_normalize,
    token_f1,
)
from rueval.scoring.task_scores import rsg_total, score_task
from rueval.tasks import Example, get_task
from rueval.tasks.base import Record

E, N, C = "entailment", "neutral", "contradiction"


def test_hand_computed_classification_metrics():
    assert ACCURACY.value(Outcomes([E, N, E, E], [E, E, E, N])) == 0.5
    # entailment: P=1/2 R=1/2 F1=1/2; neutral: P=1/2 R=1 F1=2/3; contradiction: F1=0
    assert MACRO_F1.value(Outcomes([E, E, N, C], [E, N, N, E])) == pytest.approx((0.5 + 2 / 3 + 0) / 3)
    # TP=1 TN=2 FP=0 FN=1
    assert MCC.value(Outcomes([1, 1, 0, 0], [1, 0, 0, 0])) == pytest.approx(2 / math.sqrt(12))
    # TP=2 FP=1 FN=1
    assert BINARY_F1.value(Outcomes([1, 0, 1, 1], [1, 1, 0, 1])) == pytest.approx(2 / 3)
    assert MCC.value(Outcomes([1, 0, 1, 0], [1, 1, 1, 1])) == 0.0  # a constant prediction carries no signal


def test_question_exact_match_needs_every_answer_of_a_question():
    golds, preds = [1, 0, 1, 0, 1], [1, 0, 0, 0, 1]
    questions = np.array([0, 0, 1, 1, 2])  # q1, q1, q2, q2, q3
    assert QUESTION_EM.value(Outcomes(golds, preds, units=questions)) == pytest.approx(2 / 3)


def test_russian_answer_normalisation():
    assert normalize_answer("  Ёлка, «Москва»! ") == "елка москва"
    assert normalize_answer("Санкт-Петербург") == "санктпетербург"  # deleted, as the SQuAD scorer does
    assert normalize_answer("Москва — столица") == "москва столица"
    assert NORMALIZATIONS["russian"] is normalize_answer
    assert EXACT_MATCH.value(Outcomes([("Пётр I",)], ["петр i"], normalization="russian")) == 1.0


def test_official_normalisation_deletes_ascii_punctuation_and_english_articles_only():
    for name in ("record", "squad"):
        normalize = NORMALIZATIONS[name]
        assert normalize("  The  Beatles, (a band)! ") == "beatles band"
        assert normalize("Санкт-Петербург") == "санктпетербург"
        assert normalize("«Москва» — столица") == "«москва» — столица"  # Unicode punctuation stays
        assert normalize("Ёлка") == "ёлка"  # ё stays ё
        assert normalize("Theatre an") == "theatre"  # articles only as whole words
    # what the official scorers count as a miss, the Russian opt-in forgives
    assert exact_match("Пётр", "Петр", "squad") == 0.0
    assert exact_match("«Пётр»", "петр", "russian") == 1.0


def test_token_f1_and_span_scores_take_the_best_gold():
    assert token_f1("Рустам Эмомали", "эмомали", "squad") == pytest.approx(2 / 3)  # P=1, R=1/2
    assert token_f1("Москва", "Казань", "squad") == 0.0
    golds = [("Москва", "город Москва"), ("1930",)]
    preds = ["Город москва", "1931"]
    assert TOKEN_F1.value(Outcomes(golds, preds, normalization="squad")) == pytest.approx(0.5)
    assert EXACT_MATCH.value(Outcomes(golds, preds, normalization="squad")) == pytest.approx(0.5)


def test_answers_without_tokens_score_as_each_official_scorer_does():
    # ReCoRD's F1 (RSG's RuCoS) has no special case: no overlap, 0; SQuAD 2.0's gives 1 when both are empty
    assert token_f1("", "", "record") == 0.0 and exact_match("", "", "record") == 1.0
    assert token_f1("!", "", "squad") == 1.0 and token_f1("the", "Москва", "squad") == 0.0
    with pytest.raises(RuevalError, match="unknown answer normalisation 'latin'"):
        token_f1("a", "a", "latin")


def _is_word_char(ch):
    return ch.isalnum() or ch == "_"


def _reference_normalize(text):
    """Written from the SQuAD/ReCoRD scorers' definition: lower; drop ASCII punctuation; every whole
    word (maximal run of word characters) a, an or the becomes a space; split on whitespace."""
    text = text.lower().translate({ord(ch): None for ch in string.punctuation})
    runs = ["".join(run) for _, run in itertools.groupby(text, key=_is_word_char)]
    return re.split(r"\s+", "".join(" " if run in ("a", "an", "the") else run for run in runs).strip())


def _reference_tokens(text):
    return [token for token in _reference_normalize(text) if token]


def _reference_f1(gold, pred, empty_pair_scores):
    gold_tokens, pred_tokens = _reference_tokens(gold), _reference_tokens(pred)
    if not gold_tokens and not pred_tokens:
        return empty_pair_scores
    shared = 0
    remaining = list(gold_tokens)
    for token in pred_tokens:
        if token in remaining:
            remaining.remove(token)
            shared += 1
    if shared == 0:
        return 0.0
    return 2 * shared / (len(gold_tokens) + len(pred_tokens))  # harmonic mean of P and R


PIECES = ["a", "an", "the", "The", "AN", "ёлка", "Ёлка", "елка", "москва", "Москва", "(", "«", "»", "—", "-", ",", "!"]
PIECES += ["_", "1", "thé", "an's", "the-a", "a_b", "…"]


def _random_answer(rng):
    return "".join(rng.choice(PIECES) + rng.choice(["", " ", "  ", "\t"]) for _ in range(rng.randint(0, 5)))


@pytest.mark.parametrize("seed", range(10))
def test_official_normalisations_agree_with_the_reference_definition_on_random_answers(seed):
    rng = random.Random(seed)
    for _ in range(300):
        gold, pred = _random_answer(rng), _random_answer(rng)
        assert squad_normalize(gold).split() == _reference_tokens(gold), gold
        assert exact_match(gold, pred, "squad") == float(_reference_tokens(gold) == _reference_tokens(pred))
        assert token_f1(gold, pred, "record") == pytest.approx(_reference_f1(gold, pred, empty_pair_scores=0.0))
        assert token_f1(gold, pred, "squad") == pytest.approx(_reference_f1(gold, pred, empty_pair_scores=1.0))
        # the opt-in: the same, after ё -> е and with every Unicode punctuation mark deleted
        russian = [g.replace("ё", "е").replace("Ё", "Е").translate(UNICODE_PUNCTUATION) for g in (gold, pred)]
        assert token_f1(gold, pred, "russian") == pytest.approx(_reference_f1(*russian, empty_pair_scores=1.0))


UNICODE_PUNCTUATION = {ord(ch): None for ch in "«»—…_-(),!'"}


def test_span_tasks_declare_their_official_normalisation():
    assert get_task("rucos").normalization == "record"
    assert get_task("multiq").normalization == get_task("chegeka").normalization == "squad"
    examples = [Example(idx=0, fields={}, label=("Пётр I",))]
    official = score_task(get_task("chegeka"), examples, ["Петр I"])
    russian = score_task(dataclasses.replace(get_task("chegeka"), normalization="russian"), examples, ["Петр I"])
    assert official.metrics["exact_match"] == 0.0 and russian.metrics["exact_match"] == 100.0


def test_chegeka_answers_with_alternatives_count_each():
    task = get_task("chegeka")
    record = Record(
        {"question_id": 7, "question": "ОН написал «Онегина».", "answer": "Пушкин; А. С. Пушкин;"}, "t", 1, 0
    )
    (example,) = task.parse(record)
    assert example.label == ("Пушкин", "А. С. Пушкин", "")  # the empty alternative counts, as in MERA's scorer
    scores = score_task(task, [example, example], ["а с пушкин", "Александр"])
    assert scores.metrics["exact_match"] == pytest.approx(50.0)
    plain = Record({"question_id": 8, "question": "?", "answer": "Гренландия"}, "t", 2, 1)
    assert task.parse(plain)[0].label == ("Гренландия",)


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
    every_class = f1_score(golds, preds, labels=list(labels), average="macro", zero_division=0)  # jiant's RCB F1
    assert scores["avg_f1"] == pytest.approx(100 * every_class)

    golds, preds = [rng.randint(0, 1) for _ in range(n)], [rng.randint(0, 1) for _ in range(n)]
    groups = sorted(rng.randint(0, n // 3) for _ in range(n))
    muserc = score_task(get_task("muserc"), _examples(golds, groups), preds).metrics
    assert muserc["f1a"] == pytest.approx(100 * f1_score(golds, preds, zero_division=0))
    by_group = {}
    for g, p, q in zip(golds, preds, groups):
        by_group.setdefault(q, []).append(g == p)
    assert muserc["question_em"] == pytest.approx(100 * sum(all(v) for v in by_group.values()) / len(by_group))

    golds = [rng.choice(["entailment", "not_entailment"]) for _ in range(n)]
    preds = [rng.choice(["entailment", "not_entailment"]) for _ in range(n)]
    lidirus = score_task(get_task("lidirus"), _examples(golds), preds).metrics
    assert lidirus["mcc"] == pytest.approx(100 * matthews_corrcoef(golds, preds))

    golds = [tuple(rng.randint(0, 1) for _ in range(5)) for _ in range(n)]
    preds = [tuple(rng.randint(0, 1) for _ in range(5)) for _ in range(n)]
    ethics = score_task(get_task("sit_ethics"), _examples(golds), preds)
    columns = [([g[i] for g in golds], [p[i] for p in preds]) for i in range(5)]
    assert ethics.metrics["binary_f1"] == pytest.approx(
        100 * sum(f1_score(g, p, zero_division=0) for g, p in columns) / 5
    )
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
    assert scores.metrics == {"token_f1": pytest.approx(50.0), "exact_match": pytest.approx(50.0)}


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
    assert score_task(get_task("sit_ethics"), _examples(ethics), [(0,) * 5] * 3).metrics["binary_f1"] == 0.0
