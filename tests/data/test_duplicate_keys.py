"""A JSON object that gives a key twice (`{"label": 0, "label": 1}`) is an error naming the file, the line
and the key, wherever rueval reads JSON as data: split files, MERA's files in both layouts, a run's
predictions (and the leaderboard's uploads: tests/serve/test_upload_duplicate_keys.py). JSON readers
disagree on which value wins; rueval never picks one silently."""

from __future__ import annotations

import json

import pytest
from mera_files import rcb, seven_tasks, write_snapshot, write_task_folders

from rueval.core.errors import DataError
from rueval.data import open_data
from rueval.data.mera import MeraSource
from rueval.data.reading import parse_json
from rueval.results.run import read_predictions
from rueval.tasks import get_task

TWICE = '{"idx": 7, "premise": "a", "hypothesis": "b", "label": "neutral", "label": "entailment"}'


def test_a_split_files_line_giving_a_key_twice_is_an_error_naming_its_line_and_key(data_dir):
    val = data_dir / "RCB" / "val.jsonl"
    lines = val.read_text(encoding="utf-8").splitlines()
    val.write_text("\n".join([*lines[:2], TWICE, *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        open_data(str(data_dir)).load(get_task("rcb"), "val")
    assert str(caught.value) == f"{val}:3: field 'label': given twice in one object"


def test_a_nested_object_giving_a_key_twice_is_found_too():
    with pytest.raises(DataError) as caught:
        parse_json('{"passage": {"text": "a", "questions": [{"idx": 0, "idx": 1}]}}', "MuSeRC/val.jsonl", 4)
    assert str(caught.value) == "MuSeRC/val.jsonl:4: field 'idx': given twice in one object"


def test_in_meras_task_json_the_line_where_the_object_begins_is_named(tmp_path):
    root = write_task_folders(tmp_path / "mera", {"RCB": seven_tasks()["RCB"]})
    task_json = root / "RCB" / "task.json"
    document = json.dumps({"data": seven_tasks()["RCB"]}, ensure_ascii=False, indent=1)
    first_test = document.index('"test"')
    twice = document[:first_test] + document[first_test:].replace('"id": 7', '"id": 7, "id": 8', 1)
    task_json.write_text(twice, encoding="utf-8")
    line = twice[: twice.rindex("{", 0, twice.index('"id": 7, "id": 8'))].count("\n") + 1  # the object's "{"
    with pytest.raises(DataError) as caught:
        MeraSource(root).load(get_task("rcb"), "test")
    assert str(caught.value) == f"{task_json}:{line}: field 'id': given twice in one object"


def test_in_meras_dataset_snapshot_the_line_is_named(tmp_path):
    root = write_snapshot(tmp_path / "mera", {"RCB": {"train": [rcb(1, "1")], "test": [rcb(7, ""), rcb(8, "")]}})
    test = root / "data" / "rcb" / "test.jsonl"
    lines = test.read_text(encoding="utf-8").splitlines()
    test.write_text(lines[0] + "\n" + lines[1].replace('"outputs": ""', '"outputs": "", "outputs": "1"') + "\n")
    with pytest.raises(DataError) as caught:
        MeraSource(root).load(get_task("rcb"), "test")
    assert str(caught.value) == f"{test}:2: field 'outputs': given twice in one object"


def test_a_runs_predictions_giving_a_key_twice_are_refused(tmp_path):
    predictions = tmp_path / "parus.jsonl"
    rows = ['{"idx": 0, "prediction": 1, "gold": 1}', '{"idx": 1, "prediction": 0, "prediction": 1, "gold": 0}']
    predictions.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_predictions(get_task("parus"), predictions)
    assert str(caught.value) == f"{predictions}:2: field 'prediction': given twice in one object"


@pytest.mark.parametrize("text", ['{"a": 1, "b": {"a": 2}}', '[{"a": 1}, {"a": 2}]', '{"a": {"a": {"a": 1}}}'])
def test_the_same_key_in_different_objects_is_no_duplicate(text):
    assert parse_json(text, "f.json") == json.loads(text)
