import dataclasses
import json
import random
import time

import numpy as np
import pytest

from rueval.scoring.stats import bootstrap_ci, paired_bootstrap
from rueval.scoring.task_scores import score_task, task_statistics, units_of
from rueval.tasks import TASKS, Example
from rueval.tasks.mera_generative import Graded

ANSWERS = ["Москва", "Пётр Первый", "1812 год", "Казань"]


def synthetic(task_name: str, n: int, right: float, seed: int = 0) -> tuple[list[Example], list]:
    """n examples of the task with predictions right about ``right`` of the time."""
    rng = random.Random(seed)
    task = TASKS[task_name]
    examples, preds = [], []
    for i in range(n):
        if task.kind == "multilabel":
            gold = tuple(rng.randint(0, 1) for _ in task.categories)
            pred = tuple(g if rng.random() < right else 1 - g for g in gold)
        elif task.kind == "span":
            gold = (rng.choice(ANSWERS),)
            pred = gold[0].lower() if rng.random() < right else rng.choice(ANSWERS[2:]) + " город"
        else:
            gold = rng.choice(task.labels)
            pred = gold if rng.random() < right else rng.choice(task.labels)
        group = (i // 4, 0) if task_name == "muserc" else None  # four answers per MuSeRC question
        examples.append(Example(idx=i, fields={}, label=gold, group=group))
        preds.append(pred)
    return examples, preds


# MERA's USE and code tasks score golds of their own scorers' shapes (test_metric_registry), ruDetox none
SCORED_ANSWERS = [name for name, task in TASKS.items() if task.metrics and not isinstance(task.shape, Graded)]


@pytest.mark.parametrize("task_name", SCORED_ANSWERS)
def test_summed_statistics_reproduce_score_task_exactly(task_name):
    task = TASKS[task_name]
    examples, preds = synthetic(task_name, 300, right=0.6)
    unit = units_of(examples)
    stats = task_statistics(task, examples, preds, unit)
    per_unit = np.zeros((unit.max() + 1, stats.table.shape[1]))
    np.add.at(per_unit, unit, stats.table)
    full_sample = stats.metrics_of(np.ones((1, len(per_unit))) @ per_unit)
    for metric, value in score_task(task, examples, preds).metrics.items():
        assert full_sample[metric][0] == pytest.approx(value, abs=1e-9)


@pytest.mark.parametrize("task_name", ["rcb", "lidirus", "muserc", "rucos", "sit_ethics"])
def test_interval_contains_the_point_estimate(task_name):
    task = TASKS[task_name]
    examples, preds = synthetic(task_name, 400, right=0.7)
    scores = score_task(task, examples, preds)
    intervals = bootstrap_ci(task, examples, preds)
    assert set(intervals) == {*task.metrics, "score"}
    for metric, value in {**scores.metrics, "score": scores.score}.items():
        low, high = intervals[metric]
        assert low < value < high


def test_span_statistics_use_the_task_normalisation():
    task = TASKS["chegeka"]
    examples = [Example(idx=i, fields={}, label=("Пётр Первый",)) for i in range(20)]
    preds = ["«Петр Первый»"] * 20  # a miss for the official scorer, a match for the Russian opt-in
    assert bootstrap_ci(task, examples, preds)["exact_match"] == [0.0, 0.0]
    russian = dataclasses.replace(task, normalization="russian")
    assert bootstrap_ci(russian, examples, preds)["exact_match"] == [100.0, 100.0]


def test_interval_narrows_as_examples_grow():
    task = TASKS["terra"]
    small, large = synthetic("terra", 100, right=0.7), synthetic("terra", 1600, right=0.7)
    width_small = np.diff(bootstrap_ci(task, *small)["accuracy"])[0]
    width_large = np.diff(bootstrap_ci(task, *large)["accuracy"])[0]
    assert width_large < width_small / 2.5  # the standard error shrinks as 1/sqrt(n): 4 times here


def test_intervals_are_seeded():
    task = TASKS["rcb"]
    examples, preds = synthetic("rcb", 200, right=0.6)
    assert bootstrap_ci(task, examples, preds, seed=1) == bootstrap_ci(task, examples, preds, seed=1)
    assert bootstrap_ci(task, examples, preds, seed=1) != bootstrap_ci(task, examples, preds, seed=2)


def test_muserc_resamples_whole_questions():
    """Answers of one question are right or wrong together here, so resampling answers one by one
    would understate the spread; resampling questions keeps it."""
    task = TASKS["muserc"]
    rng = random.Random(3)
    examples, preds = [], []
    for question in range(100):
        right = rng.random() < 0.5
        for answer in range(5):
            gold = rng.randint(0, 1)
            examples.append(Example(idx=(0, question, answer), fields={}, label=gold, group=(0, question)))
            preds.append(gold if right else 1 - gold)
    flat = [Example(idx=e.idx, fields={}, label=e.label) for e in examples]
    grouped_width = np.diff(bootstrap_ci(task, examples, preds)["f1a"])[0]
    flat_width = np.diff(bootstrap_ci(TASKS["parus"], flat, preds)["accuracy"])[0]
    grouped_accuracy_width = np.diff(bootstrap_ci(TASKS["parus"], examples, preds)["accuracy"])[0]
    assert grouped_accuracy_width > 1.7 * flat_width  # about sqrt(5) wider
    assert grouped_width > 1.7 * flat_width
    low, high = bootstrap_ci(task, examples, preds)["question_em"]
    assert low < score_task(task, examples, preds).metrics["question_em"] < high


def test_paired_bootstrap_finds_a_clearly_better_run():
    task = TASKS["rcb"]
    examples, weak = synthetic("rcb", 300, right=0.3, seed=1)
    rng = random.Random(2)
    strong = [e.label if rng.random() < 0.9 else p for e, p in zip(examples, weak)]
    result = paired_bootstrap(task, examples, strong, weak)
    accuracy = result["accuracy"]
    accuracies = [score_task(task, examples, preds).metrics["accuracy"] for preds in (strong, weak)]
    assert accuracy.diff == pytest.approx(accuracies[0] - accuracies[1])
    assert accuracy.diff > 20 and accuracy.ci[0] > 0
    assert accuracy.p_value < 0.01 and result["score"].p_value < 0.01
    reverse = paired_bootstrap(task, examples, weak, strong)["accuracy"]
    assert reverse.diff == pytest.approx(-accuracy.diff) and reverse.ci[1] < 0 and reverse.p_value < 0.01


def test_paired_bootstrap_of_identical_runs_finds_nothing():
    task = TASKS["chegeka"]
    examples, preds = synthetic("chegeka", 200, right=0.5)
    for difference in paired_bootstrap(task, examples, preds, list(preds)).values():
        assert difference.diff == 0 and difference.ci == (0.0, 0.0) and difference.p_value == 1.0


def test_paired_bootstrap_of_equally_good_runs_is_not_significant():
    task = TASKS["danetqa"]
    examples, preds_a = synthetic("danetqa", 300, right=0.6, seed=4)
    right = [i for i, (e, p) in enumerate(zip(examples, preds_a)) if e.label == p]
    wrong = [i for i, (e, p) in enumerate(zip(examples, preds_a)) if e.label != p]
    preds_b = list(preds_a)
    for i in right[:15] + wrong[:15]:  # B errs on 15 other examples: different, equally good
        preds_b[i] = not preds_b[i]
    difference = paired_bootstrap(task, examples, preds_a, preds_b)["accuracy"]
    assert difference.diff == pytest.approx(0)
    assert difference.p_value > 0.5 and difference.ci[0] < 0 < difference.ci[1]


def test_thousand_resamples_of_thousands_of_examples_take_seconds():
    task = TASKS["rcb"]
    examples, preds = synthetic("rcb", 5000, right=0.6)
    started = time.perf_counter()
    paired_bootstrap(task, examples, preds, preds[::-1])
    assert time.perf_counter() - started < 10


def test_run_records_an_interval_for_every_metric(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("run", "-t", "rcb,muserc,rucos", "-o", out).exit_code == 0
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for result in summary["tasks"].values():
        assert set(result["ci"]) == {*result["metrics"], "score"}
        for metric, (low, high) in result["ci"].items():
            value = result["score"] if metric == "score" else result["metrics"][metric]
            assert low <= value <= high
