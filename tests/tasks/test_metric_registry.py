"""The metric registry: every task's metrics are registered with a title and an lm-eval name, each
formula agrees with scikit-learn's or the official scorers' definition, and its statistics are
sufficient: the metric of a resample's summed statistics is the metric of that resample."""

import random
from statistics import fmean

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from rueval.core.errors import RuevalError
from rueval.scoring.metrics import (
    ACCURACY,
    AVG_F1,
    BINARY_F1,
    EXACT_MATCH,
    F1A,
    GRADE_NORM,
    MACRO_F1,
    MCC,
    METRICS,
    PASS_AT,
    QUESTION_EM,
    TOKEN_F1,
    Metric,
    Outcomes,
    exact_match,
    metric,
    register,
    token_f1,
)
from rueval.scoring.task_scores import example_metrics
from rueval.tasks import TASKS

LABELS = ("entailment", "contradiction", "neutral")
ANSWERS = ["Москва", "город Москва", "Пётр Первый", "1812 год", "Казань", "the Beatles", ""]


def test_every_task_names_registered_metrics_with_a_title_and_an_lm_eval_name():
    for task in TASKS.values():
        for name in task.metrics:
            assert metric(name) is METRICS[name] and metric(name).name == name
            assert metric(name).title and metric(name).lm_eval_name and metric(name).description
        lm_eval_names = [metric(name).lm_eval_name for name in task.metrics]
        assert len(set(lm_eval_names)) == len(lm_eval_names), task.name  # distinct keys in results_lmeval.json


def test_the_papers_titles_and_distinct_names_for_distinct_formulas():
    assert [metric(m).title for m in TASKS["muserc"].metrics] == ["F1a", "EM"]
    assert [metric(m).title for m in TASKS["sit_ethics"].metrics] == ["F1", "Acc"]
    assert TASKS["sit_ethics"].metrics[0] != TASKS["multiq"].metrics[0]  # binary F1 is not token F1
    assert TASKS["muserc"].metrics[1] != TASKS["rucos"].metrics[1]  # per-question EM is not an answer's EM
    assert (BINARY_F1.lm_eval_name, TOKEN_F1.lm_eval_name, EXACT_MATCH.lm_eval_name) == ("f1", "f1", "exact_match")


def test_a_metric_without_a_title_or_lm_eval_name_cannot_be_declared():
    for missing in ("title", "lm_eval_name"):
        fields = {"name": "x", "title": "X", "lm_eval_name": "x", "description": "x"} | {missing: ""}
        with pytest.raises(ValueError, match=f"{missing} is empty"):
            Metric(**fields, statistics=ACCURACY.statistics, of_sums=ACCURACY.of_sums)


def test_a_name_is_registered_once_and_an_unknown_one_is_a_user_error():
    with pytest.raises(ValueError, match="registered twice"):
        register(ACCURACY)
    with pytest.raises(RuevalError, match="unknown metric 'f1'; expected one of: accuracy, .*token_f1"):
        metric("f1")


def _classification(rng, n, labels):
    golds = [rng.choice(labels) for _ in range(n)]
    preds = [g if rng.random() < 0.5 else rng.choice([*labels, "other"]) for g in golds]  # some out of label space
    return golds, preds


@pytest.mark.parametrize("seed", range(25))
def test_classification_metrics_equal_scikit_learns_on_random_data(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 80)
    labels = LABELS[: rng.randint(1, 3)]
    golds, preds = _classification(rng, n, labels)
    outcomes = Outcomes(golds, preds, labels)
    assert ACCURACY.value(outcomes) == pytest.approx(accuracy_score(golds, preds), abs=1e-12)
    macro = f1_score(golds, preds, average="macro", zero_division=0)
    assert MACRO_F1.value(outcomes) == pytest.approx(macro, abs=1e-12)
    # jiant's RCB F1: every class of the label space, an absent one's 0 included
    over_labels = f1_score(golds, preds, labels=list(labels), average="macro", zero_division=0)
    assert AVG_F1.value(outcomes) == pytest.approx(over_labels, abs=1e-12)
    assert MCC.value(outcomes) == pytest.approx(matthews_corrcoef(golds, preds), abs=1e-12)
    binary_golds = [rng.randint(0, 1) for _ in range(n)]
    binary_preds = [rng.choice([0, 1, 1]) if rng.random() < 0.8 else 0 for _ in range(n)]
    binary = Outcomes(binary_golds, binary_preds, (0, 1))
    expected = f1_score(binary_golds, binary_preds, pos_label=1, average="binary", zero_division=0)
    assert BINARY_F1.value(binary) == F1A.value(binary) == pytest.approx(expected, abs=1e-12)


def test_degenerate_samples_score_as_scikit_learn_does():
    assert MCC.value(Outcomes([1, 1, 1], [1, 1, 1])) == 0.0  # one class throughout
    assert BINARY_F1.value(Outcomes([0, 0], [0, 0])) == 0.0  # no positive: zero_division=0
    assert MACRO_F1.value(Outcomes(["a", "a"], ["b", "b"])) == 0.0


@pytest.mark.parametrize("seed", range(10))
def test_question_exact_match_is_the_share_of_questions_right_throughout(seed):
    rng = random.Random(seed)
    units = np.array(sorted(rng.randint(0, 15) for _ in range(60)))
    units = np.unique(units, return_inverse=True)[1]  # codes 0, 1, ...
    golds = [rng.randint(0, 1) for _ in units]
    preds = [g if rng.random() < 0.85 else 1 - g for g in golds]
    right = {u: all(g == p for g, p, v in zip(golds, preds, units) if v == u) for u in set(units)}
    assert QUESTION_EM.value(Outcomes(golds, preds, units=units)) == pytest.approx(fmean(right.values()))


@pytest.mark.parametrize("normalization", ["record", "squad", "russian"])
def test_answer_metrics_take_the_best_gold_answer_and_average_over_questions(normalization):
    rng = random.Random(normalization)
    golds = [tuple(rng.sample(ANSWERS, rng.randint(1, 3))) for _ in range(40)]
    preds = [rng.choice(ANSWERS).upper() for _ in golds]
    outcomes = Outcomes(golds, preds, normalization=normalization)
    # SQuAD's and ReCoRD's scripts: metric_max_over_ground_truths per question, then the mean
    best_f1 = [max(token_f1(g, p, normalization) for g in gs) for gs, p in zip(golds, preds)]
    best_em = [max(exact_match(g, p, normalization) for g in gs) for gs, p in zip(golds, preds)]
    assert TOKEN_F1.value(outcomes) == pytest.approx(fmean(best_f1), abs=1e-12)
    assert EXACT_MATCH.value(outcomes) == pytest.approx(fmean(best_em), abs=1e-12)


def _resampled(outcomes, counts):
    """The sample with unit u drawn counts[u] times, each copy a unit of its own, as a bootstrap resample."""
    units = np.arange(len(outcomes.golds)) if outcomes.units is None else outcomes.units
    drawn = [u for u, c in enumerate(counts) for _ in range(c)]
    rows = [(i, copy) for copy, u in enumerate(drawn) for i in np.flatnonzero(units == u)]
    golds, preds = [outcomes.golds[i] for i, _ in rows], [outcomes.preds[i] for i, _ in rows]
    copies = None if outcomes.units is None else np.array([copy for _, copy in rows])
    return Outcomes(golds, preds, outcomes.labels, copies, outcomes.normalization)


@pytest.mark.parametrize("seed", range(10))
def test_the_metric_of_a_resamples_summed_statistics_is_the_metric_of_that_resample(seed):
    rng = random.Random(seed)
    golds, preds = _classification(rng, 40, LABELS)
    binary = [rng.randint(0, 1) for _ in range(40)], [rng.randint(0, 1) for _ in range(40)]
    answers = [(rng.choice(ANSWERS),) for _ in range(40)], [rng.choice(ANSWERS) for _ in range(40)]
    questions = np.repeat(np.arange(10), 4)  # four answer options per question
    kinds, expected = ("text", "matching", "multiple_choice_based_on_text"), ("3", "10")
    # USE's golds: [answer, type, id_task, variant, max points]
    graded = [(rng.choice(["а", "1,2"]), rng.choice(kinds), rng.choice(["1", "16"]), rng.randint(1, 4), 3)
              for _ in range(40)]  # fmt: skip
    programs = [[rng.choice([list(expected), ["3", None]]) for _ in range(10)] for _ in range(40)]
    samples = {
        ACCURACY: Outcomes(golds, preds, LABELS),
        MACRO_F1: Outcomes(golds, preds, LABELS),
        AVG_F1: Outcomes(golds, preds, LABELS),
        MCC: Outcomes(golds, preds, LABELS),
        BINARY_F1: Outcomes(*binary, (0, 1)),
        F1A: Outcomes(*binary, (0, 1)),
        QUESTION_EM: Outcomes(*binary, (0, 1), units=questions),
        TOKEN_F1: Outcomes(*answers, normalization="squad"),
        EXACT_MATCH: Outcomes(*answers, normalization="squad"),
        GRADE_NORM: Outcomes(graded, [rng.choice(["а", "1,2", "2,1"]) for _ in graded]),
        **{PASS_AT[k]: Outcomes([expected] * 40, programs) for k in PASS_AT},
    }
    assert set(samples) == set(METRICS.values())  # every registered metric is checked
    for m, outcomes in samples.items():
        units = np.arange(40) if outcomes.units is None else outcomes.units
        per_unit = np.zeros((units.max() + 1, m.statistics(outcomes).shape[1]))
        np.add.at(per_unit, units, m.statistics(outcomes))  # as the bootstrap sums a unit's examples once
        counts = np.array([rng.choice([0, 0, 1, 1, 2, 3]) for _ in per_unit])
        expected = m.value(_resampled(outcomes, counts))
        assert m.of_sums(counts[None, :] @ per_unit)[0] == pytest.approx(expected, abs=1e-12), m.name


def test_sample_logs_record_each_examples_own_metrics_under_lm_eval_names():
    multiq, ethics, lidirus = TASKS["multiq"], TASKS["sit_ethics"], TASKS["lidirus"]
    gold = ("Рустам Эмомали", "Эмомали Рахмон")
    assert example_metrics(multiq, gold, "эмомали") == {"f1": pytest.approx(2 / 3), "exact_match": 0.0}
    assert example_metrics(ethics, (1, 0, 0, 1, 0), (1, 0, 0, 1, 0)) == {"acc": 1.0}  # every category right
    assert example_metrics(lidirus, "entailment", "not_entailment") == {"acc": 0.0}  # MCC has no per-example value
