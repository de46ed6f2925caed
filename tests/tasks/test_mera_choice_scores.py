"""MERA's metrics for its choice and classification tasks of its own: accuracy, its per-group figures
(ruMMLU's acc.<domain>, ruHHH's acc.<criteria>, ruHateSpeech's acc.<target_group>) and ruEthics' MCC
of the one answer with each criterion per question, against scikit-learn's definitions."""

from __future__ import annotations

import random

import pytest
from mera_choice_files import CRITERIA, ethics, hate, hhh, knowledge
from mera_files import write_snapshot
from sklearn.metrics import accuracy_score, matthews_corrcoef

from rueval.data import open_data
from rueval.scoring.task_scores import score_task
from rueval.tasks import get_task


def examples_of(tmp_path, folder, task, records):
    return open_data(str(write_snapshot(tmp_path, {folder: {"test": records}}))).load(get_task(task), "test").examples


GROUPED = {  # task: (its folder, a record of group g with answer a, the groups, the answers)
    "rummlu": ("ruMMLU", lambda i, g, a: knowledge(i, a, g), ("anatomy", "virology", "law"), "ABCD"),
    "ruhhh": ("ruHHH", lambda i, g, a: hhh(i, a, g), ("helpful", "honest", "harmless"), "12"),
    "ruhatespeech": ("ruHateSpeech", lambda i, g, a: hate(i, a, g), ("женщины", "мигранты", "лгбт"), "12"),
}


@pytest.mark.parametrize("task", GROUPED)
def test_accuracy_and_each_groups_accuracy_are_meras(tmp_path, task):
    folder, record, groups, answers = GROUPED[task]
    draw = random.Random(task)
    records = [record(i, draw.choice(groups), draw.choice(answers)) for i in range(40)]
    examples = examples_of(tmp_path, folder, task, records)
    labels = get_task(task).labels_of(examples[0])
    preds = [draw.choice(labels) for _ in examples]
    scores = score_task(get_task(task), examples, preds)
    golds = [e.label for e in examples]
    assert scores.metrics["accuracy"] == pytest.approx(100 * accuracy_score(golds, preds))
    group_of = {"rummlu": "domain", "ruhhh": "criteria", "ruhatespeech": "target_group"}[task]
    for group in groups:  # MERA's acc.<group>: the accuracy on the group's records alone
        rows = [i for i, r in enumerate(records) if (r["meta"] | r["inputs"])[group_of] == group]
        expected = 100 * accuracy_score([golds[i] for i in rows], [preds[i] for i in rows])
        assert scores.breakdown[group] == {"accuracy": pytest.approx(expected), "n": len(rows)}
    assert set(scores.breakdown) == set(groups)


def test_ruethics_scores_the_one_answer_against_each_criterion_per_question(tmp_path):
    draw = random.Random(7)
    questions = ("correct", "good", "ethical")
    records = [ethics(i, "".join(draw.choice("01") for _ in CRITERIA), draw.choice(questions)) for i in range(60)]
    examples = examples_of(tmp_path, "ruEthics", "ruethics", records)
    answers = [draw.choice((0, 1)) for _ in examples]
    preds = [(a,) * len(CRITERIA) for a in answers]  # the prompt's prediction: one answer for every criterion
    scores = score_task(get_task("ruethics"), examples, preds)
    for question in questions:  # MERA's scorer: "<question>.<criterion>", the MCC over that question's records
        rows = [i for i, r in enumerate(records) if r["meta"]["question"] == question]
        for c, criterion in enumerate(CRITERIA):
            expected = matthews_corrcoef([examples[i].label[c] for i in rows], [answers[i] for i in rows])
            assert scores.breakdown[f"{question}.{criterion}"] == {"mcc": pytest.approx(100 * expected), "n": len(rows)}
    assert len(scores.breakdown) == 15
    # rueval's headline: each criterion's MCC over every record, averaged over the five
    per_criterion = [matthews_corrcoef([e.label[c] for e in examples], answers) for c in range(len(CRITERIA))]
    assert scores.metrics == {"mcc": pytest.approx(100 * sum(per_criterion) / len(CRITERIA))}
