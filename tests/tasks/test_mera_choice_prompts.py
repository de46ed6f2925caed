"""MERA's prompts and demonstrations for its choice and classification tasks of its own."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from mera_choice_files import BPS_INSTRUCTION, hate, knowledge, nine_tasks
from mera_files import write_snapshot

from rueval.data import open_data
from rueval.data.mera_choice_tasks import DIALOGUE
from rueval.tasks import get_task
from rueval.tasks.fewshot import demonstrations
from rueval.tasks.prompts import get_prompt


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return open_data(str(write_snapshot(tmp_path_factory.mktemp("mera"), nine_tasks(test_answers=True))))


def first(source, task, split="test", n=0):
    return source.load(get_task(task), split).examples[n]


def test_a_task_whose_inputs_are_one_text_fills_it_and_keeps_the_instructions_other_braces(source):
    (question,) = get_prompt("bps").questions(first(source, "bps"))
    # MERA's BPS file fills {inputs} alone: "фигурные {}" stays as written
    assert question.context == BPS_INSTRUCTION.replace("{inputs}", "( [ ] )")
    assert [c.continuation for c in question.choices] == [" 0", " 1"] and question.target == " 1"
    (lcs,) = get_prompt("lcs").after_demonstrations(first(source, "lcs"))
    assert lcs.context == "Строки: ABCD BCD\nОтвет:" and len(lcs.choices) == 10 and lcs.target == " 3"


def test_a_rutie_question_follows_its_dialogue_so_far_with_the_models_answers(source):
    prompt, example = get_prompt("rutie"), first(source, "rutie", n=2)
    turns = [
        {"question": f"Вопрос {q}?", "choice1": "Да.", "choice2": "Нет.", "answer": a} for q, a in ((0, "2"), (1, "1"))
    ]
    (question,) = prompt.questions(replace(example, fields={**example.fields, DIALOGUE: turns}))
    # MERA's context former: the instruction's text before {context}, each earlier question in the
    # task's form with the model's answer, a blank line after each, then the rest of the instruction
    assert question.context == (
        "Диалог с {{собеседником}}.\nВопрос 0?\n1. Да.\n2. Нет.\nОтвет: 2\n\n"
        "Вопрос 1?\n1. Да.\n2. Нет.\nОтвет: 1\n\nВопрос 2?\n1. Да.\n2. Нет.\nОтвет:"
    )
    assert question.target == " 1"
    (opening,) = prompt.questions(first(source, "rutie"))  # no question before it: the delimiter, then the question
    assert opening.context == "\n\nДиалог с {{собеседником}}.\nВопрос 0?\n1. Да.\n2. Нет.\nОтвет:"


def test_ruethics_is_one_answer_judged_by_each_criterion_its_demonstration_the_majority(source):
    prompt, example = get_prompt("ruethics"), first(source, "ruethics", n=1)  # criteria 0, 0, 1, 0, 1
    (question,) = prompt.questions(example)
    assert [(c.continuation, c.label) for c in question.choices] == [(" 0", 0), (" 1", 1)]
    assert question.target == " 0"  # two of five criteria say 1: MERA's demonstration answer is 0
    assert prompt.prediction(example, [1]) == (1, 1, 1, 1, 1)


def test_knowledge_tasks_read_as_meras_demonstration_form_with_their_letters(source):
    example = first(source, "rummlu", n=1)
    (after,) = get_prompt("rummlu").after_demonstrations(example)
    assert after.context == "Сколько костей в теле взрослого?\nA) 206\nB) 300\nC) 12\nD) 1\nОтвет:"
    assert [c.continuation for c in after.choices] == [" A", " B", " C", " D"] and after.target == " C"
    (demo,) = get_prompt("rummlu").demonstration(example, 0)
    assert demo.context.startswith("Тема: virology.\n")  # the first demonstration: the record's instruction


def test_a_ruhatespeech_demonstration_keeps_the_instruction_unstripped(tmp_path):
    spaced = {**hate(0, "1"), "instruction": "  Реплика: {replica}\nОтвет: "}
    source = open_data(str(write_snapshot(tmp_path, {"ruHateSpeech": {"test": [spaced]}})))
    example = source.load(get_task("ruhatespeech"), "test").examples[0]
    (demo,) = get_prompt("ruhatespeech").demonstration(example, 0)
    (question,) = get_prompt("ruhatespeech").questions(example)
    assert demo.context == "  Реплика: Реплика.\nОтвет: " and question.context == "Реплика: Реплика.\nОтвет:"


def test_a_domains_items_draw_their_demonstrations_from_that_domain_in_turn(tmp_path):
    domains = ["anatomy", "virology", "virology", "law", "anatomy", "virology"]
    train = [knowledge(i, "A", domain, f"Вопрос {i}?") for i, domain in enumerate(domains)]
    test = [knowledge(100 + i, "", domain, f"Задача {i}?") for i, domain in enumerate(["virology", "anatomy"] * 3)]
    source = open_data(str(write_snapshot(tmp_path, {"ruMMLU": {"train": train, "test": test}})))
    train_examples = source.load(get_task("rummlu"), "train").examples
    items = source.load(get_task("rummlu"), "test").examples
    drawn = demonstrations(train_examples, 2, 0, 1234, len(items), 0, "rummlu", items)
    draw = random.Random(1234)  # MERA's sampler: one generator, each item's from its own domain
    expected = [draw.sample([i for i, d in enumerate(domains) if d == item.fields["domain"]], 2) for item in items]
    assert [[demo.idx for demo in demos] for demos in drawn] == expected
    assert all(demo.fields["domain"] == item.fields["domain"] for item, demos in zip(items, drawn) for demo in demos)


def test_demonstrations_drawn_from_the_test_leave_the_item_itself_out(tmp_path):
    test = [hate(i, "12"[i % 2]) | {"inputs": {**hate(i, "1")["inputs"], "replica": f"Реплика {i}."}} for i in range(6)]
    source = open_data(str(write_snapshot(tmp_path, {"ruHateSpeech": {"test": test}})))
    task = get_task("ruhatespeech")
    pool, items = source.load(task, "train").examples, source.load(task, "test").examples
    drawn = demonstrations(pool, 1, 0, 1234, len(items), 0, "ruhatespeech", items)
    draw = random.Random(1234)
    expected = [[j for j in draw.sample(range(6), 1) if j != i] for i in range(6)]  # lm-eval: one fewer then
    assert [[demo.idx for demo in demos] for demos in drawn] == expected
    assert any(not demos for demos in expected)  # the case is met: an item drew itself
