"""MERA's choice and classification tasks of its own, read from MERA's files in both layouts."""

from __future__ import annotations

import pytest
from mera_choice_files import bps, ethics, hhh, knowledge, nine_tasks, tie, write
from mera_files import LAYOUTS, write_snapshot

from rueval.core.errors import DataError
from rueval.data import open_data
from rueval.data.mera import MeraSource
from rueval.data.mera_tasks import MERA_TASKS
from rueval.tasks import get_task

NINE = ("rummlu", "mamuramu", "mathlogicqa", "ruhhh", "ruhatespeech", "rutie", "bps", "lcs", "ruethics")
FOLDERS = {name: MERA_TASKS[name] for name in NINE}  # MERA's name of each: its folder


def read_all(source, split="test"):
    return {name: [(e.idx, e.label) for e in source.load(get_task(name), split).examples] for name in NINE}


def test_both_layouts_read_the_same_examples_with_meras_answers_as_the_tasks_labels(tmp_path):
    tasks = nine_tasks(test_answers=True)
    folders = open_data(str(write("task folders", tmp_path / "folders", tasks)))
    snapshot = open_data(str(write("dataset snapshot", tmp_path / "snapshot", tasks)))
    assert isinstance(folders, MeraSource) and isinstance(snapshot, MeraSource)
    read = read_all(snapshot)
    assert read == read_all(folders)
    for name in NINE:  # every record, in MERA's order, under its meta.id
        records = tasks[FOLDERS[name]]["test"]
        if name != "rutie":
            assert [idx for idx, _ in read[name]] == [r["meta"]["id"] for r in records], name
    answers = {"rummlu": "outputs", "mamuramu": "outputs", "mathlogicqa": "outputs", "bps": "outputs", "lcs": "outputs"}
    for name, key in answers.items():  # letters and digits as MERA writes them
        assert [label for _, label in read[name]] == [r[key] for r in tasks[FOLDERS[name]]["test"]], name
    for name in ("ruhhh", "ruhatespeech"):  # "1"/"2": the first or second reply
        assert [label for _, label in read[name]] == [int(r["outputs"]) - 1 for r in tasks[FOLDERS[name]]["test"]]
    assert read["ruethics"][1] == (1, (0, 0, 1, 0, 1))  # each criterion's 0/1, in the task's order


def test_rutie_dialogues_are_unfolded_into_questions_keyed_as_meras_scorer_keys_them(tmp_path):
    source = open_data(str(write("task folders", tmp_path, nine_tasks())))
    examples = source.load(get_task("rutie"), "test").examples
    turns = [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert [e.idx for e in examples] == [f"dialog_id:{d};question_id:{q}" for d, q in turns]
    assert examples[1].fields["dialog_id"] == 0 and examples[1].fields["question_id"] == 1


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_task_takes_its_demonstrations_from_the_split_its_task_file_names(tmp_path, layout):
    source = open_data(str(write(layout, tmp_path, nine_tasks())))
    lcs = source.load(get_task("lcs"), "train")  # MERA's LCS: training_split public_test
    assert [e.idx for e in lcs.examples] == [0, 1] and [e.label for e in lcs.examples] == ["3", "2"]
    hhh_train = source.load(get_task("ruhhh"), "train")  # no training split: lm-eval draws from the test
    assert [e.idx for e in hhh_train.examples] == [e.idx for e in source.load(get_task("ruhhh"), "test").examples]


def test_hidden_answers_read_as_a_test_without_answers(tmp_path):
    source = open_data(str(write_snapshot(tmp_path, nine_tasks())))
    for name in ("rummlu", "mamuramu", "mathlogicqa", "bps", "lcs"):
        assert not source.load(get_task(name), "test").labelled, name
    hidden = {"ruEthics": {"test": [ethics(0, None)]}}  # every criterion "", as MERA's scorer hides them
    assert not open_data(str(write_snapshot(tmp_path / "ethics", hidden))).load(get_task("ruethics"), "test").labelled


BAD = {
    "a ruMMLU record without its domain": ("ruMMLU", "rummlu", {"meta": {"id": 3}}, "meta.domain"),
    "a ruEthics criterion that is not 0 or 1": ("ruEthics", "ruethics", "ethics", "outputs.law"),
    "a BPS record whose inputs are not its sequence": ("BPS", "bps", {"inputs": {"text": "( )"}}, "inputs"),
    "a ruTiE question without its dialogue": ("ruTiE", "rutie", {"meta": {"question_id": 1}}, "meta.dialog_id"),
    "a ruHHH answer that is no reply": ("ruHHH", "ruhhh", {"outputs": "3"}, "outputs"),
}
GOOD = {"ruMMLU": knowledge(1, "A"), "ruEthics": ethics(1, "10101"), "BPS": bps(1, "1"), "ruTiE": tie(0, 0, "1"),
        "ruHHH": hhh(1, "1")}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_a_malformed_record_names_its_file_line_and_field(tmp_path, case, cli):
    folder, name, change, field = BAD[case]
    bad = ethics(2, "12101") if change == "ethics" else {**GOOD[folder], **change}
    data = write_snapshot(tmp_path, {folder: {"train": [GOOD[folder]], "test": [GOOD[folder], bad]}})
    with pytest.raises(DataError) as caught:
        open_data(str(data)).load(get_task(name), "test")
    assert caught.value.file.endswith(f"data/{folder.lower()}/test.jsonl")
    assert (caught.value.line, caught.value.field) == (2, field)
    result = cli("run", "-m", "majority", "-t", name, "--data", data, "-o", tmp_path / "run")
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "test.jsonl:2" in line and field in line and "Traceback" not in result.output
