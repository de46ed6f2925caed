"""The plug-in registries keyed by task name cover exactly the tasks they claim, and the task
declarations hold what every consumer reads from them."""

import pytest

from rueval.core.errors import RuevalError
from rueval.robustness.targets import TARGETS
from rueval.scoring.slices import SLICES
from rueval.solvers.heuristics import RULES
from rueval.solvers.tfidf import fields, official
from rueval.tasks import RSG, TAPE, TASKS
from rueval.tasks.mera_generative import Graded
from rueval.tasks.prompts import PROMPTS


def test_every_task_has_a_prompt_and_perturbation_targets():
    assert set(PROMPTS) == set(TASKS)
    assert set(TARGETS) == set(TASKS)


def test_heuristic_rules_cover_the_rsg_tasks_but_rwsd():
    # the heuristics paper found no rule for RWSD (Section 3.7); TAPE has none
    assert set(RULES) == {task.name for task in RSG.tasks} - {"rwsd"}


def test_tfidf_fields_reads_every_task_in_exactly_one_way():
    graded = {name for name, task in TASKS.items() if isinstance(task.shape, Graded)}  # MERA's USE, code tasks
    for name in graded:
        with pytest.raises(RuevalError, match=f"does not know how to read task '{name}'"):
            fields.fields_model(TASKS[name], 0)
    ways = {name: type(fields.fields_model(task, 0)).__name__ for name, task in TASKS.items() if name not in graded}
    by_way = {way: {name for name, chosen in ways.items() if chosen == way} for way in ways.values()}
    assert by_way == {
        "LabelModel": {"lidirus", "rcb", "terra", "russe", "rwsd", "danetqa", "muserc", "winograd", "bps", "lcs"},
        "OptionModel": {
            "parus",
            "ru_openbook",
            "ru_worldtree",
            "rucos",
            "multiq",
            "rummlu",
            "mamuramu",
            "mathlogicqa",
            "ruhhh",
            "ruhatespeech",
            "rutie",
        },  # fmt: skip
        "CategoryModel": {"sit_ethics", "per_ethics", "ruethics"},
        "NearestAnswerModel": {"chegeka", "simplear", "rumodar", "rumultiar", "rudetox"},
    }


def test_official_tfidf_joins_the_texts_of_every_rsg_task_it_classifies():
    # MuSeRC and RuCoS are answered by cosine similarity, without a classifier (the official scripts)
    joined = {task.name for task in RSG.tasks if isinstance(official.official_model(task, 0), official.JoinedTextModel)}
    assert joined == {task.name for task in RSG.tasks} - {"muserc", "rucos"}
    assert set(official.JOINS) < joined  # the scripts' own joins, the rest read the task's texts in order


def test_slices_claim_only_known_tasks_with_the_fields_they_read():
    for chosen in SLICES.values():
        assert set(chosen.tasks) <= set(TASKS), chosen.name
    assert set(SLICES["exam"].tasks) == {name for name in TASKS if name == "ru_worldtree"}


@pytest.mark.parametrize("task", TASKS.values(), ids=TASKS)
def test_each_task_declares_its_texts_title_and_shape(task):
    assert task.title and set(task.main_fields) <= set(task.text_fields)
    assert task.nested == (task.name in ("muserc", "rucos"))
    assert task.inline_options == (task.name in ("ru_openbook", "ru_worldtree", "rummlu", "mamuramu", "mathlogicqa"))
    assert (task.train_from is not None) == (task.name == "lidirus")


def test_benchmarks_list_their_tasks_in_the_papers_column_order():
    assert [t.title for t in TAPE.tasks] == [
        "Winograd",
        "RuWorldTree",
        "RuOpenBookQA",
        "MultiQ",
        "CheGeKa",
        "Ethics-1",
        "Ethics-2",
    ]  # TAPE Table 3
    assert [t.title for t in RSG.tasks][:3] == ["LiDiRus", "RCB", "PARus"]  # RSG Table 2
