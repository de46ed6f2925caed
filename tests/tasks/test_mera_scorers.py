"""MERA's own scorers of its generative tasks: USE's grading by question type and grade_norm over exam
variants, and pass@k, against values worked out by hand here."""

from __future__ import annotations

from math import comb

import pytest

from rueval.scoring.mera_scorers import pass_at, pass_at_k, use_grade
from rueval.scoring.metrics import GRADE_NORM, PASS_AT, Outcomes


@pytest.mark.parametrize(
    ("answer", "kind", "id_task", "prediction", "points"),
    [
        ("река", "text", "5", "Река.", 1),  # the letters, lower-cased
        ("река", "text", "5", "река 1", 1),  # digits and spaces dropped
        ("праздничного,праздничный", "text", "5", "праздничный", 1),  # one of the right answers
        ("река", "text", "5", "озеро", 0),
        ("1,3", "multiple_choice_based_on_text", "1", "3,1", 1),  # the same set, any order
        ("1,3", "multiple_choice_based_on_text", "1", "1,3,4", 0),
        ("1,3", "multiple_choice_options_within_text", "2", "1", 0),
        ("8,1,9,7", "matching", "26", "8,1,7,9", 2),  # a point per position
        ("8,1,9,7", "matching", "26", "8,1,9", 0),  # another length: none
        ("1,2,4", "multiple_choice_independent_options", "16", "1,2", 2),  # two right, none too many
        ("1,2,4", "multiple_choice_independent_options", "16", "1,2,3,4", 2),  # three right, one too many
        ("1,2", "multiple_choice_independent_options", "16", "3,4,5", 0),  # never below 0
        ("1,2,4", "multiple_choice_independent_options", "15", "1,2", 0),  # question 15: all or nothing
    ],
)
def test_use_grades_an_answer_by_its_questions_type(answer, kind, id_task, prediction, points):
    assert use_grade(answer, kind, id_task, prediction) == points


def test_grade_norm_is_the_mean_over_variants_of_points_over_points_possible():
    golds = [("а", "text", "5", 7, 1), ("1,2", "matching", "26", 7, 2), ("1,3", "matching", "26", 9, 4)]
    preds = ["а", "1,3", "1,3"]  # 1 point of 1; 1 of 2; 2 of 4 (the lengths match, both positions right)
    # variant 7: (1 + 1) / (1 + 2); variant 9: 2 / 4; their mean
    assert GRADE_NORM.value(Outcomes(golds, preds)) == pytest.approx(((1 + 1) / 3 + 2 / 4) / 2)


def by_formula(n: int, c: int, k: int) -> float:
    """Chen et al. (2021): 1 - C(n - c, k) / C(n, k), the chance that k of n samples hold one that passes."""
    return 1.0 - comb(n - c, k) / comb(n, k)


@pytest.mark.parametrize("c", range(11))
@pytest.mark.parametrize("k", [1, 5, 10])
def test_pass_at_k_is_the_unbiased_estimator(c, k):
    assert pass_at_k(10, c, k) == pytest.approx(by_formula(10, c, k), abs=1e-12)


def test_an_items_samples_pass_when_every_tests_result_is_the_expected_text():
    expected = ("3", "10")
    passing, failing = ["3", "10"], ["3", None]
    samples = [passing] * 3 + [failing] * 6 + [["3", "10", "x"]]  # 3 pass; a third result does not
    assert pass_at(1)(expected, samples) == pytest.approx(by_formula(10, 3, 1))
    assert pass_at(5)(expected, tuple(map(tuple, samples))) == pytest.approx(by_formula(10, 3, 5))  # as read back
    outcomes = Outcomes([expected, expected], [samples, [passing] * 10])
    assert PASS_AT[5].value(outcomes) == pytest.approx((by_formula(10, 3, 5) + 1.0) / 2)
    assert pass_at(1)(expected, []) == 0.0
