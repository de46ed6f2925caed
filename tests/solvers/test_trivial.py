from collections import Counter

import pytest

from rueval.core.errors import RuevalError
from rueval.solvers import make_solver
from rueval.tasks import Example, get_task


def examples(labels, **fields):
    return [Example(idx=i, fields=fields, label=label) for i, label in enumerate(labels)]


TRAIN = ["neutral"] * 6 + ["entailment"] * 3 + ["contradiction"] * 1
RCB = get_task("rcb")


def fit_predict(name, task, train, n, seed=0):
    solver = make_solver(name, seed)
    solver.fit(task, examples(train))
    return solver.predict(task, examples([None] * n))


def test_majority_predicts_the_most_frequent_train_label():
    assert set(fit_predict("majority", RCB, TRAIN, 50)) == {"neutral"}


def test_weighted_random_follows_train_proportions():
    counts = Counter(fit_predict("weighted-random", RCB, TRAIN, 20000))
    assert counts["neutral"] / 20000 == pytest.approx(0.6, abs=0.02)
    assert counts["contradiction"] / 20000 == pytest.approx(0.1, abs=0.02)


def test_random_is_uniform_over_the_label_space_and_needs_no_train():
    counts = Counter(fit_predict("random", RCB, [], 30000))
    assert set(counts) == set(RCB.labels)
    assert all(c / 30000 == pytest.approx(1 / 3, abs=0.02) for c in counts.values())


def test_predictions_are_deterministic_under_a_seed():
    assert fit_predict("random", RCB, TRAIN, 100, seed=7) == fit_predict("random", RCB, TRAIN, 100, seed=7)
    assert fit_predict("random", RCB, TRAIN, 100, seed=7) != fit_predict("random", RCB, TRAIN, 100, seed=8)


def test_majority_without_train_labels_is_an_error_not_a_guess():
    with pytest.raises(RuevalError, match="needs labelled train examples"):
        fit_predict("majority", RCB, [], 3)


def test_ethics_categories_get_their_own_priors():
    task = get_task("per_ethics")
    train = [(1, 0, 0, 1, 0)] * 3 + [(1, 1, 0, 0, 0)]
    assert fit_predict("majority", task, train, 2) == [(1, 0, 0, 1, 0)] * 2
    weighted = fit_predict("weighted-random", task, train, 4000)
    assert {p[0] for p in weighted} == {1} and {p[2] for p in weighted} == {0}
    assert sum(p[1] for p in weighted) / 4000 == pytest.approx(0.25, abs=0.03)


def test_rucos_chooses_among_entity_mentions():
    task = get_task("rucos")
    query = Example(idx=(0, 0), fields={}, candidates=("Москва", "ТАСС", "Москва", "Путин"))
    solver = make_solver("majority")
    solver.fit(task, [])
    assert solver.predict(task, [query]) == ["Москва"]
    solver = make_solver("random", seed=1)
    solver.fit(task, [])
    assert set(solver.predict(task, [query] * 300)) == {"Москва", "ТАСС", "Путин"}


def test_open_answer_tasks_choose_among_train_answers():
    task = get_task("chegeka")
    train = [("Волга",), ("Волга",), ("1961",)]
    assert fit_predict("majority", task, train, 3) == ["Волга"] * 3
    assert set(fit_predict("random", task, train, 200)) == {"Волга", "1961"}
    with pytest.raises(RuevalError, match="needs labelled train examples"):
        fit_predict("random", task, [], 1)
