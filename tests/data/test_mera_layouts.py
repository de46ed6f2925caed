from __future__ import annotations

import json

import pytest
from mera_files import LAYOUTS, chegeka, multiq, rcb, science, seven_tasks, spans, write_snapshot, write_task_folders

from rueval.core.errors import DataError
from rueval.data import eval_split, open_data
from rueval.data.local import DataSource
from rueval.data.mera import MeraSource
from rueval.tasks import get_task

SHARED = ("parus", "rcb", "rwsd", "ru_worldtree", "ru_openbook", "multiq", "chegeka")


def read_all(source, split="test"):
    return {name: [(e.idx, e.label) for e in source.load(get_task(name), split).examples] for name in SHARED}


def test_the_dataset_repositorys_files_read_as_the_task_folders_do(tmp_path):
    tasks = seven_tasks(test_answers=True)
    folders = open_data(str(write_task_folders(tmp_path / "folders", tasks)))
    snapshot = open_data(str(write_snapshot(tmp_path / "snapshot", tasks)))
    data_folder = open_data(str(tmp_path / "snapshot" / "data"))  # the snapshot's data/ given itself
    assert all(isinstance(source, MeraSource) for source in (folders, snapshot, data_folder))
    assert read_all(snapshot) == read_all(folders) == read_all(data_folder)
    assert read_all(snapshot)["multiq"] == [(424, ("Айювы",)), (425, ("России", "Коми"))]
    assert read_all(snapshot)["rcb"] == [(7, "contradiction"), (3, "neutral"), (11, "entailment")]
    rcb_val = snapshot.load(get_task("rcb"), "val")  # MERA's dev.jsonl
    assert rcb_val.file.endswith("data/rcb/dev.jsonl") and [e.idx for e in rcb_val.examples] == [90, 91]
    assert not snapshot.has_split(get_task("ru_worldtree"), "val")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_record_keeps_meras_own_instruction_inputs_and_outputs(tmp_path, layout):
    source = open_data(str(LAYOUTS[layout](tmp_path, seven_tasks())))
    (first, *_) = source.load(get_task("chegeka"), "train").examples
    assert first.fields["mera"]["instruction"].startswith("Категория")
    assert first.fields["mera"]["inputs"]["topic"] == "Металлы"
    assert first.fields["mera"]["outputs"] == "Ртуть"


def test_a_multiple_choice_record_keeps_every_option_it_has(tmp_path):
    source = open_data(str(write_snapshot(tmp_path, seven_tasks(test_answers=True))))
    five = source.load(get_task("ru_worldtree"), "test").examples[1]
    assert five.label == "E"
    assert five.fields["question"].endswith("(D) карандаш (E) гвоздь")
    assert get_task("ru_worldtree").labels_of(five) == ("A", "B", "C", "D", "E")


def test_an_option_left_null_is_no_option(tmp_path):
    four = science(1, "D")
    four["inputs"]["option_e"] = None  # as `datasets` writes a record beside others with five options
    write_snapshot(tmp_path, {"ruWorldTree": {"train": [science(2, "A")], "test": [four]}})
    example = open_data(str(tmp_path)).load(get_task("ru_worldtree"), "test").examples[0]
    assert get_task("ru_worldtree").labels_of(example) == ("A", "B", "C", "D")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_meras_hidden_answers_read_as_a_test_without_answers(tmp_path, layout):
    source = open_data(str(LAYOUTS[layout](tmp_path, seven_tasks())))
    for name in SHARED:
        test = source.load(get_task(name), "test")
        assert not test.labelled, name
    # four tasks have no validation split: their test is the split run, to be predicted
    for name in ("ru_worldtree", "ru_openbook", "multiq", "chegeka"):
        assert eval_split(source, get_task(name), None, None).name == "test"
    assert eval_split(source, get_task("rcb"), None, None).name == "val"  # RCB's labelled validation is scored


def test_answer_spans_with_no_text_are_hidden_answers(tmp_path):
    # ai-forever/MERA's test files hide MultiQ's answers as one span with no text
    hidden = {**spans(multiq(424, "Айювы")), "outputs": [{"label": "", "length": 0, "offset": 0, "segment": ""}]}
    (tmp_path / "MultiQ").mkdir()
    (tmp_path / "MultiQ" / "task.json").write_text(
        json.dumps({"data": {"train": [spans(multiq(1, "Айювы"))], "test": [hidden]}}, ensure_ascii=False)
    )
    assert open_data(str(tmp_path)).load(get_task("multiq"), "test").examples[0].label is None


def test_a_bad_line_of_the_dataset_files_names_its_file_line_and_field(tmp_path):
    write_snapshot(tmp_path, {"RCB": {"train": [rcb(1, "1")], "test": [rcb(2, ""), rcb(3, "4")]}})
    with pytest.raises(DataError) as caught:
        open_data(str(tmp_path)).load(get_task("rcb"), "test")
    assert caught.value.file.endswith("data/rcb/test.jsonl")
    assert (caught.value.line, caught.value.field) == (2, "outputs")


def test_options_that_skip_a_letter_are_an_error_naming_the_inputs(tmp_path):
    gap = science(1, "A")
    del gap["inputs"]["option_b"]
    write_snapshot(tmp_path, {"ruWorldTree": {"train": [science(2, "A")], "test": [gap]}})
    with pytest.raises(DataError) as caught:
        open_data(str(tmp_path)).load(get_task("ru_worldtree"), "test")
    assert (caught.value.line, caught.value.field) == (1, "inputs")


def test_a_tape_folder_of_the_same_name_is_not_taken_for_meras_files(tmp_path):
    (tmp_path / "data" / "chegeka").mkdir(parents=True)
    record = {"question_id": 1, "question": "ЭТОТ МЕТАЛЛ жидкий.", "topic": "Металлы", "answer": "Ртуть"}
    (tmp_path / "data" / "chegeka" / "test.jsonl").write_text(json.dumps(record, ensure_ascii=False) + "\n")
    source = open_data(str(tmp_path))
    assert not isinstance(source, MeraSource) and isinstance(source, DataSource)
    assert source.load(get_task("chegeka"), "test").examples[0].label == ("Ртуть",)


def test_a_chegeka_answer_that_is_not_text_is_an_error(tmp_path):
    write_snapshot(tmp_path, {"CheGeKa": {"train": [chegeka(1, "Ртуть")], "test": [chegeka(2, ["Ртуть"])]}})
    with pytest.raises(DataError) as caught:
        open_data(str(tmp_path)).load(get_task("chegeka"), "test")
    assert caught.value.field == "outputs"
