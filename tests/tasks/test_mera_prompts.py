from __future__ import annotations

import pytest
from mera_files import seven_tasks, write_snapshot

from rueval.data import open_data
from rueval.tasks import get_task
from rueval.tasks.prompts import get_prompt


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return open_data(str(write_snapshot(tmp_path_factory.mktemp("mera"), seven_tasks(test_answers=True))))


def example(source, task, split="test", n=0):
    return source.load(get_task(task), split).examples[n]


def test_without_demonstrations_the_records_own_instruction_is_asked_stripped(source):
    (question,) = get_prompt("ru_openbook").questions(example(source, "ru_openbook"))
    assert question.context == "Что притягивает магнит?\nA. фольгу\nB. скрепку\nC. линейку\nD. карандаш\nОтвет:"
    assert [c.continuation for c in question.choices] == [" A", " B", " C", " D"]
    assert question.target == " D"


def test_the_first_demonstration_is_the_instruction_with_the_rsg_tasks_answer_cue(source):
    rwsd = example(source, "rwsd", "train")
    (demo,) = get_prompt("rwsd").demonstration(rwsd, 0)
    assert demo.context.endswith("? Ответь Да или Нет.\nОтвет:")
    assert demo.target == " Нет"
    (science,) = get_prompt("ru_worldtree").demonstration(example(source, "ru_worldtree", "train"), 0)
    assert science.context.endswith("D. карандаш\nОтвет:")  # the TAPE tasks' instruction, stripped, no second cue


def test_later_demonstrations_and_the_question_after_them_read_in_meras_form(source):
    rcb = example(source, "rcb")
    (later,) = get_prompt("rcb").demonstration(rcb, 1)
    (after,) = get_prompt("rcb").after_demonstrations(rcb)
    assert later == after
    assert after.context == "Ситуация: Маша знала, что идёт дождь.\nГипотеза: Идёт дождь.\nОтвет:"
    (multiq,) = get_prompt("multiq").after_demonstrations(example(source, "multiq"))
    assert multiq.context.startswith("Вопрос: Куда впадает река?\nТекст 1: Висвож") and multiq.choices == ()


def test_an_item_with_five_options_is_asked_with_its_five_letters(source):
    five = example(source, "ru_worldtree", n=1)
    (question,) = get_prompt("ru_worldtree").after_demonstrations(five)
    assert question.context.endswith("C) линейку\nD) карандаш\nE) гвоздь\nОтвет:")
    assert [c.continuation for c in question.choices] == [" A", " B", " C", " D", " E"]
    assert question.target == " E"


def test_a_generated_demonstration_shows_the_records_own_answer_text(source):
    (demo,) = get_prompt("chegeka").demonstration(example(source, "chegeka", "train", 1), 0)
    assert demo.target == " Галлий;Gallium"  # MERA shows a demonstration's outputs as they are


def test_a_generated_answer_loses_its_leading_spaces_only(source):
    chegeka = example(source, "chegeka")
    assert get_prompt("chegeka").prediction(chegeka, ["  Ртуть \t"]) == "Ртуть \t"
