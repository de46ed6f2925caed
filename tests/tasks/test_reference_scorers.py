"""rueval's metrics against the reference scorers on randomized subsets with edge cases: RCB with a
class absent from a subset, CheGeKa with empty alternative answers. The values were computed by
running the reference code itself (benchmarks/reference_scorers_side.py, in the references' own
virtualenvs) and are kept here as data:

- RCB: jiant 2.2.0 (nyu-mll/jiant, CommitmentBankEvaluationScheme; its
  repository at daa5a258e3af5e7503288de8401429eaf3f58e13) with scikit-learn 1.9.1, and
  RussianSuperGLUE jiant-russian-v2 RCBTask, allennlp 0.8.4 (RussianNLP/RussianSuperGLUE at
  1aff0918f226252eb304bdcdadf9eef5926cc924), float32 as allennlp computes.
- CheGeKa: MERA-Evaluation/MERA modules/scoring CheGeKa, transformers 4.30.2 (MERA-Evaluation/MERA at
  9cf05b2d04a17fa23c71d0d67ade591a6ef392d6).
"""

from __future__ import annotations

import pytest

from rueval.data.records import Record
from rueval.scoring.metrics import METRICS, Outcomes
from rueval.scoring.stats import bootstrap_ci
from rueval.scoring.task_scores import score_task
from rueval.tasks import get_task

RCB_CODES = {"N": "neutral", "E": "entailment", "C": "contradiction"}

# golds, predictions (one letter per example), jiant 2.2.0's avg_f1 and acc, RSG jiant's f1
RCB_CASES = [
    ("EENE", "NENE", 0.48888888888888893, 0.75, 0.4888888994852702),
    ("CNENNCE", "ENENNCN", 0.6746031746031745, 0.7142857142857143, 0.6746031840642294),
    ("ECECCEECCE", "CEECCCCCCC", 0.30036630036630035, 0.5, 0.3003663122653961),
    ("CNCC", "CCNC", 0.2222222222222222, 0.5, 0.22222222884496054),
    ("CCCCCCCCCCC", "CCNCCCCCCCC", 0.31746031746031744, 0.9090909090909091, 0.3174603184064229),
    ("N", "N", 0.3333333333333333, 1.0, 0.3333333333333333),
    ("NNNNNNNNNNN", "NCNNNNNCNNN", 0.3, 0.8181818181818182, 0.30000001192092896),
    ("NNEEENEEE", "NNNECENEE", 0.3904761904761904, 0.5555555555555556, 0.39047618707021076),
    ("CCCCCCC", "CCCNCCC", 0.3076923076923077, 0.8571428571428571, 0.3076923092206319),
    ("EECNEEEECC", "EEECENCECC", 0.4329004329004329, 0.6, 0.43290042877197266),
    ("ECCNEECE", "NENCENCN", 0.24444444444444446, 0.25, 0.2444444497426351),
    ("CENEECNNENE", "NNCNCNEEENN", 0.15, 0.18181818181818182, 0.15000000099341074),
    ("NECNECN", "CCNNNEN", 0.19047619047619047, 0.2857142857142857, 0.1904761791229248),
    ("E", "E", 0.3333333333333333, 1.0, 0.3333333333333333),
    ("CECECCCC", "ECCEECCE", 0.3111111111111111, 0.5, 0.31111112236976624),
    ("NNNENNNCN", "CNENECENE", 0.06666666666666667, 0.1111111111111111, 0.06666666766007741),
    ("N", "N", 0.3333333333333333, 1.0, 0.3333333333333333),
    ("CNNNC", "CNNCC", 0.5333333333333333, 0.8, 0.5333333412806193),
    ("NNNNNN", "NNNNCC", 0.26666666666666666, 0.6666666666666666, 0.26666667064030963),
    ("NE", "EN", 0.0, 0.0, 0.0),
    ("ENENNECCCNN", "ECCCCNCCEEC", 0.24444444444444446, 0.2727272727272727, 0.2444444497426351),
    ("NNEEENNENE", "ENEEENENNC", 0.4222222222222222, 0.6, 0.4222222367922465),
    ("CCCCCCC", "CCCNCCC", 0.3076923076923077, 0.8571428571428571, 0.3076923092206319),
    ("CC", "NC", 0.2222222222222222, 0.5, 0.22222222884496054),
    ("NNNNNNNNN", "ECNCENENN", 0.20512820512820515, 0.4444444444444444, 0.20512821276982626),
    ("NNNNNNNNNN", "CNNNNNNNNN", 0.3157894736842105, 0.9, 0.31578946113586426),
    ("EEENE", "ENENN", 0.38888888888888884, 0.6, 0.3888888955116272),
    ("NNC", "NNC", 0.6666666666666666, 1.0, 0.6666666666666666),
    ("CCENEEEC", "NNENEECC", 0.5857142857142857, 0.625, 0.5857142905394236),
    ("CNCNCCNEE", "CNCENECEC", 0.43333333333333335, 0.4444444444444444, 0.4333333373069763),
    ("ENEENECCCNE", "CECCENENCCN", 0.08333333333333333, 0.09090909090909091, 0.08333333333333333),
    ("N", "N", 0.3333333333333333, 1.0, 0.3333333333333333),
    ("NCNNNCN", "NCNNNCN", 0.6666666666666666, 1.0, 0.6666666666666666),
    ("EEEENCECNNNC", "ECCCEEENCECE", 0.12121212121212122, 0.16666666666666666, 0.12121212482452393),
    ("NCNNECCN", "ECCEEECC", 0.3238095238095238, 0.375, 0.32380951444307965),
    ("CNCNC", "CNCCN", 0.38888888888888884, 0.6, 0.3888888955116272),
    ("C", "C", 0.3333333333333333, 1.0, 0.3333333333333333),
    ("EEC", "ECN", 0.2222222222222222, 0.3333333333333333, 0.22222222884496054),
    ("CEECCCNEEC", "NEENCNENEE", 0.3333333333333333, 0.4, 0.3333333333333333),
    ("EEEEEEEEEEE", "EEEECEEEEEE", 0.31746031746031744, 0.9090909090909091, 0.3174603184064229),
]

# gold answers (";" separates alternatives), predictions, MERA's f1 and em
CHEGEKA_CASES = [
    ([";Пингвин", "Ответ", ";Пингвин", "  ;  "], ["Война и мир", "Война и мир", "петр", "—"], 0.0, 0.0),
    (
        ["Пётр I;;Пётр Первый", "Пётр I;;Пётр Первый", "  ;  ", "...", ";", "  ;  "],
        ["петр", "Война и мир", "...", "Пингвин", "Война и мир", "петр"],
        0.16666666666666666,
        0.16666666666666666,
    ),
    (
        ["«Война и мир»;", "  ;  ", "Ответ", "«Война и мир»;", "...", "«Война и мир»;"],
        ["—", "петр", "Война и мир", "Пингвин", "пингвин!", "пингвин!"],
        0.0,
        0.0,
    ),
    ([";", "Пётр I;;Пётр Первый"], ["—", "..."], 0.5, 0.5),
    ([";Пингвин", "Пингвин;", ";Пингвин", "Пингвин;"], [" ", " ", "пингвин!", "..."], 1.0, 1.0),
    (
        ["Пётр I;;Пётр Первый", "Пингвин;", "«Война и мир»;", "Ответ", ";Пингвин", "..."],
        ["Пётр Первый", "Пингвин", "петр", " ", "Пингвин", "Пётр Первый"],
        0.5,
        0.5,
    ),
    ([";", "  ;  ", "  ;  "], [" ", "Война и мир", "Война и мир"], 0.3333333333333333, 0.3333333333333333),
    ([";", ";Пингвин"], ["Война и мир", ""], 0.5, 0.5),
    (["Пингвин;", ";Пингвин"], ["Война и мир", "Пётр Первый"], 0.0, 0.0),
    ([";Пингвин"], ["пингвин!"], 1.0, 1.0),
    (
        ["Пётр I;;Пётр Первый", ";", "Ответ", "Пётр I;;Пётр Первый", "...", ";Пингвин"],
        ["", "пингвин!", "Пингвин", "—", "пингвин!", ""],
        0.3333333333333333,
        0.3333333333333333,
    ),
    (["...", "«Война и мир»;"], ["Пингвин", " "], 0.5, 0.5),
    ([";", "  ;  ", "«Война и мир»;"], ["—", "...", "петр"], 0.3333333333333333, 0.3333333333333333),
    (
        ["  ;  ", "  ;  ", "Пингвин;", "Пингвин;", ";Пингвин", "«Война и мир»;"],
        ["...", "—", "", "петр", "пингвин!", "—"],
        0.5,
        0.5,
    ),
    (
        [";Пингвин", "Пингвин;", "Ответ", "«Война и мир»;", "Ответ", "«Война и мир»;"],
        ["—", "", "", "Пингвин", "Война и мир", ""],
        0.3333333333333333,
        0.3333333333333333,
    ),
    (["Пингвин;", "Пингвин;", "  ;  "], ["—", "—", "Пингвин"], 0.0, 0.0),
    (["  ;  ", "Пётр I;;Пётр Первый"], ["петр", "пингвин!"], 0.0, 0.0),
    (["  ;  ", "«Война и мир»;", "«Война и мир»;", ";Пингвин"], ["—", "петр", "Пётр Первый", "Война и мир"], 0.0, 0.0),
    ([";Пингвин", "Пётр I;;Пётр Первый"], ["Война и мир", "Пётр Первый"], 0.5, 0.5),
    (
        ["Пингвин;", ";", "Пингвин;", ";Пингвин", "Ответ", "  ;  "],
        ["", "—", "петр", "петр", "", "пингвин!"],
        0.16666666666666666,
        0.16666666666666666,
    ),
    ([";", "...", "...", ";", "  ;  "], ["пингвин!", "...", " ", " ", ""], 0.8, 0.8),
    ([";Пингвин", "«Война и мир»;"], ["пингвин!", "..."], 1.0, 1.0),
    ([";Пингвин", "«Война и мир»;", "...", "..."], ["—", "Пингвин", "Война и мир", "Пингвин"], 0.0, 0.0),
    (["  ;  ", ";Пингвин", "  ;  ", "Пингвин;"], ["Пётр Первый", "", "...", "..."], 0.75, 0.75),
    (["Пингвин;", "Ответ"], ["—", "Пингвин"], 0.0, 0.0),
    (
        ["Пингвин;", "Пингвин;", "Ответ", "  ;  ", "Пётр I;;Пётр Первый"],
        ["Пингвин", "пингвин!", "", "Пингвин", "Пётр Первый"],
        0.6,
        0.6,
    ),
    (
        ["Пётр I;;Пётр Первый", "Ответ", ";Пингвин", "  ;  ", ";Пингвин"],
        ["...", "пингвин!", " ", "—", "петр"],
        0.4,
        0.4,
    ),
    (["Пётр I;;Пётр Первый"], ["Война и мир"], 0.0, 0.0),
    (["Ответ", ";Пингвин", "«Война и мир»;"], [" ", "пингвин!", " "], 0.6666666666666666, 0.6666666666666666),
    ([";", "...", "  ;  ", ";Пингвин", "  ;  "], ["", "Пётр Первый", "—", "пингвин!", "петр"], 0.4, 0.4),
    (
        [";", "  ;  ", "«Война и мир»;", ";Пингвин", "Пингвин;", ";Пингвин"],
        ["—", "пингвин!", "—", "Пётр Первый", "пингвин!", "Пингвин"],
        0.3333333333333333,
        0.3333333333333333,
    ),
    (
        ["«Война и мир»;", "...", "Ответ", "Пётр I;;Пётр Первый"],
        ["", "Война и мир", "Пингвин", "Пётр Первый"],
        0.5,
        0.5,
    ),
    ([";Пингвин", "«Война и мир»;", "..."], ["Война и мир", "пингвин!", " "], 0.3333333333333333, 0.3333333333333333),
    (["  ;  ", "Ответ", "..."], [" ", "Пингвин", "Война и мир"], 0.3333333333333333, 0.3333333333333333),
    (["Пингвин;", "Пингвин;", "Ответ"], ["Пингвин", "Пётр Первый", "..."], 0.3333333333333333, 0.3333333333333333),
    (
        ["Пингвин;", "«Война и мир»;", ";Пингвин", ";", "...", "«Война и мир»;"],
        ["...", "Пётр Первый", "", "Пингвин", "Пётр Первый", "—"],
        0.3333333333333333,
        0.3333333333333333,
    ),
    (
        ["Ответ", "«Война и мир»;", "Пингвин;"],
        ["пингвин!", "Пингвин", "пингвин!"],
        0.3333333333333333,
        0.3333333333333333,
    ),
    (
        ["«Война и мир»;", ";", "...", "Ответ", "  ;  "],
        ["Война и мир", "Пингвин", " ", "Война и мир", "пингвин!"],
        0.26666666666666666,
        0.2,
    ),
    (["  ;  "], ["Война и мир"], 0.0, 0.0),
    (["Ответ", "Пингвин;", ";Пингвин", "  ;  "], ["петр", "пингвин!", " ", "—"], 0.5, 0.5),
]


def rcb_examples(golds: str):
    task = get_task("rcb")
    records = [{"premise": "п", "hypothesis": "г", "idx": i, "label": RCB_CODES[g]} for i, g in enumerate(golds)]
    return task, [task.parse(Record(r, "val.jsonl", i + 1, i))[0] for i, r in enumerate(records)]


@pytest.mark.parametrize(("golds", "preds", "f1", "accuracy", "rsg_f1"), RCB_CASES)
def test_rcb_f1_counts_an_absent_class_as_jiant_does(golds, preds, f1, accuracy, rsg_f1):
    task, examples = rcb_examples(golds)
    scores = score_task(task, examples, [RCB_CODES[p] for p in preds])
    assert scores.metrics["avg_f1"] == pytest.approx(100 * f1, abs=1e-9)
    assert scores.metrics["accuracy"] == pytest.approx(100 * accuracy, abs=1e-9)
    assert scores.metrics["avg_f1"] == pytest.approx(100 * rsg_f1, abs=1e-5)  # allennlp's float32


def test_rcb_f1_and_scikit_learns_macro_f1_differ_only_where_a_class_is_absent():
    differ = 0
    for golds, preds, f1, _, _ in RCB_CASES:
        task, examples = rcb_examples(golds)
        outcomes = Outcomes([e.label for e in examples], [RCB_CODES[p] for p in preds], task.labels)
        sklearn_style = METRICS["macro_f1"].value(outcomes)
        if set(golds + preds) == set("NEC"):
            assert sklearn_style == pytest.approx(f1)
        differ += sklearn_style != pytest.approx(f1)
    assert differ >= 10  # the subsets do exercise the edge case


def test_the_bootstrap_applies_the_same_f1_to_each_resample():
    task, examples = rcb_examples("ENNCEECNEE")
    preds = [RCB_CODES[p] for p in "EEENCCNNEE"]
    outcomes = Outcomes([e.label for e in examples], preds, task.labels)
    metric = METRICS["avg_f1"]
    statistics = metric.statistics(outcomes)
    for drawn in ([0, 0, 0, 0], [1, 1, 1, 1], [2, 5, 5, 9]):  # resamples where classes go missing
        resample = Outcomes([outcomes.golds[i] for i in drawn], [preds[i] for i in drawn], task.labels)
        assert metric.of_sums(statistics[drawn].sum(axis=0, keepdims=True))[0] == pytest.approx(metric.value(resample))
    low, high = bootstrap_ci(task, examples, preds)["avg_f1"]
    assert low <= 100 * metric.value(outcomes) <= high


@pytest.mark.parametrize(("golds", "preds", "f1", "em"), CHEGEKA_CASES)
def test_chegeka_scores_an_empty_alternative_as_meras_scorer_does(golds, preds, f1, em):
    task = get_task("chegeka")
    records = [{"question_id": i, "question": "вопрос", "answer": gold} for i, gold in enumerate(golds)]
    examples = [task.parse(Record(r, "test.jsonl", i + 1, i))[0] for i, r in enumerate(records)]
    scores = score_task(task, examples, preds)
    assert scores.metrics["token_f1"] == pytest.approx(100 * f1, abs=1e-9)
    assert scores.metrics["exact_match"] == pytest.approx(100 * em, abs=1e-9)
