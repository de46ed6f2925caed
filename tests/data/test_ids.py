"""Ids are checked where they enter, by the rule of each layout, as the official files have them:

- RussianSuperGLUE: every record, MuSeRC question and answer, and RuCoS query has an integer idx
  (never null, a float, a boolean, a string such as "2", a list or an object), and a missing one
  is an error;
- MERA: meta.id is an integer;
- TAPE: chegeka's question_id (integers), ru_openbook's ID (strings such as "14-1486") and an idx
  where a record carries one are integers or non-empty strings; files without ids (winograd,
  ru_worldtree, multiq, the Ethics sets) number their records by position, and one split never
  mixes the two, nor integer with string ids;
- ids are unique per split (and per perturbation in TAPE's episodes files): a record's idx, every
  example's idx path, and a MuSeRC question's idx within its passage.

A bad id is a DataError naming file, line and field; the submission writers check the ids they
are about to write against the split and write nothing that does not match.
"""

from __future__ import annotations

import json

import pytest
from support import write_jsonl

from rueval.core.errors import DataError, RuevalError
from rueval.data import Example, Split, check_written_ids, open_data, submission_ids
from rueval.run.submission import submission_lines
from rueval.tasks import get_task

PARUS = {"premise": "Стекло разбилось.", "choice1": "Мяч.", "choice2": "Снег.", "question": "cause", "label": 0}
WINOGRAD = {"text": "Он пришёл.", "options": ["он"], "reference": "он", "answer": "он", "label": 1}
OPENBOOK = {"question": "Что? (A) а (B) б (C) в (D) г", "answer": "A"}


def load(root, task, split="val"):
    return open_data(str(root)).load(get_task(task), split)


def refused(root, task, split="val") -> DataError:
    with pytest.raises(DataError) as caught:
        load(root, task, split)
    return caught.value


@pytest.mark.parametrize(
    ("idx", "got"),
    [
        (None, "null"),
        (2.5, "float 2.5"),
        ("2", "str '2'"),
        ([1, 2], "list [1, 2]"),
        ({"a": 1}, "dict"),
        (True, "boolean"),
    ],
)
def test_an_rsg_idx_that_is_not_an_integer_is_an_error_naming_file_line_and_field(tmp_path, idx, got):
    path = write_jsonl(tmp_path / "PARus" / "val.jsonl", [{**PARUS, "idx": 0}, {**PARUS, "idx": idx}])
    error = refused(tmp_path, "parus")
    assert (error.file, error.line, error.field) == (str(path), 2, "idx")
    assert f"expected an integer as the id, got {got}" in str(error)


def test_a_missing_rsg_idx_is_an_error_even_where_its_position_is_free_or_taken(tmp_path):
    path = write_jsonl(tmp_path / "PARus" / "test.jsonl", [{**PARUS, "idx": 1}, PARUS])  # position 1 is taken
    error = refused(tmp_path, "parus", "test")
    assert str(error) == f"{path}:2: field 'idx': missing; every record needs its id"
    write_jsonl(tmp_path / "PARus" / "test.jsonl", [PARUS, {**PARUS, "idx": 7}])
    assert refused(tmp_path, "parus", "test").line == 1


def test_a_repeated_idx_names_both_lines(tmp_path):
    path = write_jsonl(tmp_path / "PARus" / "val.jsonl", [{**PARUS, "idx": i} for i in (4, 5, 4)])
    assert str(refused(tmp_path, "parus")) == f"{path}:3: field 'idx': duplicate idx 4 (first seen on line 1)"


def muserc(idx, question_idx=0, answer_idx=0):
    answers = [{"idx": answer_idx, "text": "да", "label": 1}]
    return {
        "idx": idx,
        "passage": {"text": "Текст.", "questions": [{"idx": question_idx, "question": "?", "answers": answers}]},
    }


def test_nested_ids_are_checked_at_their_own_path(tmp_path):
    write_jsonl(tmp_path / "MuSeRC" / "val.jsonl", [muserc(0, question_idx=None)])
    assert refused(tmp_path, "muserc").field == "passage.questions[0].idx"
    write_jsonl(tmp_path / "MuSeRC" / "val.jsonl", [muserc(0, answer_idx="1")])
    assert refused(tmp_path, "muserc").field == "passage.questions[0].answers[0].idx"
    query = {"idx": 2.0, "query": "@placeholder пришёл.", "answers": [{"start": 0, "end": 2, "text": "Он"}]}
    rucos = {"idx": 0, "passage": {"text": "Он пришёл.", "entities": [{"start": 0, "end": 2}]}, "qas": [query]}
    write_jsonl(tmp_path / "RuCoS" / "val.jsonl", [rucos])
    assert refused(tmp_path, "rucos").field == "qas[0].idx"


def test_a_passage_or_a_question_idx_used_twice_is_refused_though_each_answer_path_is_unique(tmp_path):
    path = write_jsonl(tmp_path / "MuSeRC" / "val.jsonl", [muserc(3, 0, 0), muserc(3, 1, 1)])
    assert str(refused(tmp_path, "muserc")) == f"{path}:2: field 'idx': duplicate idx 3 (first seen on line 1)"
    record = muserc(3, 0, 0)
    other = {"idx": 5, "question": "?", "answers": [{"idx": 9, "text": "нет", "label": 0}]}
    record["passage"]["questions"] += [
        other,
        {**record["passage"]["questions"][0], "answers": [{**other["answers"][0], "idx": 8}]},
    ]
    write_jsonl(tmp_path / "MuSeRC" / "val.jsonl", [record])
    assert "duplicate question idx 3/0 in one passage" in str(refused(tmp_path, "muserc"))


def test_tape_ids_are_kept_as_the_files_have_them_and_files_without_ids_are_numbered_by_position(tmp_path):
    write_jsonl(tmp_path / "ru_openbook" / "test.jsonl", [{**OPENBOOK, "ID": "14-1486"}, {**OPENBOOK, "ID": "828"}])
    assert [e.idx for e in load(tmp_path, "ru_openbook", "test").examples] == ["14-1486", "828"]
    write_jsonl(tmp_path / "winograd" / "test.jsonl", [WINOGRAD] * 3)
    assert [e.idx for e in load(tmp_path, "winograd", "test").examples] == [0, 1, 2]
    chegeka = {"question": "Что?", "answer": "Ртуть", "topic": "Металлы"}
    write_jsonl(tmp_path / "chegeka" / "test.jsonl", [{**chegeka, "question_id": 27039}])
    assert [e.idx for e in load(tmp_path, "chegeka", "test").examples] == [27039]


@pytest.mark.parametrize("bad", [None, "", "  ", 2.5, True, [1]])
def test_a_tape_id_that_is_not_an_integer_or_text_is_an_error(tmp_path, bad):
    path = write_jsonl(tmp_path / "ru_openbook" / "test.jsonl", [{**OPENBOOK, "ID": "1"}, {**OPENBOOK, "ID": bad}])
    error = refused(tmp_path, "ru_openbook", "test")
    assert (error.file, error.line, error.field) == (str(path), 2, "ID")
    assert "expected an integer or a non-empty string as the id" in str(error)


def test_one_split_never_mixes_ids_with_positions_nor_integer_ids_with_text(tmp_path):
    path = write_jsonl(tmp_path / "winograd" / "test.jsonl", [WINOGRAD, {**WINOGRAD, "idx": 0}])
    error = refused(tmp_path, "winograd", "test")
    assert str(error) == (
        f"{path}:2: field 'idx': has an id, while line 1 has none (so records are numbered by position)"
    )
    write_jsonl(tmp_path / "winograd" / "test.jsonl", [{**WINOGRAD, "idx": 5}, WINOGRAD])
    assert str(refused(tmp_path, "winograd", "test")).endswith(":2: field 'idx': has no id, while line 1 has one")
    write_jsonl(tmp_path / "ru_openbook" / "test.jsonl", [{**OPENBOOK, "ID": "1"}, {**OPENBOOK, "ID": 2}])
    assert "expected a string id like line 1's, got 2" in str(refused(tmp_path, "ru_openbook", "test"))


def test_perturbed_copies_may_repeat_their_originals_ids(tmp_path):
    original = {**OPENBOOK, "ID": "7-1", "perturbation": "ru_openbook"}
    write_jsonl(tmp_path / "ru_openbook" / "test.jsonl", [original, {**original, "perturbation": "butter_fingers"}])
    split = open_data(str(tmp_path)).load_perturbed(get_task("ru_openbook"), "test")
    assert [e.idx for e in split.originals] == ["7-1"] and [e.idx for e in split.perturbed["butter_fingers"]] == ["7-1"]


def mera_rcb(tmp_path, ids):
    inputs = {"premise": "Маша знала, что идёт дождь.", "hypothesis": "Идёт дождь."}
    records = [{"instruction": "{premise}", "inputs": inputs, "outputs": "1", "meta": {"id": i}} for i in ids]
    (tmp_path / "RCB").mkdir(exist_ok=True)
    (tmp_path / "RCB" / "task.json").write_text(json.dumps({"data": {"test": records}}), encoding="utf-8")


def test_meras_meta_id_must_be_an_integer_and_unique(tmp_path):
    for bad in (None, 2.5, "2", True):
        mera_rcb(tmp_path, [1, bad])
        with pytest.raises(DataError) as caught:
            load(tmp_path, "rcb", "test")
        assert caught.value.field == "meta.id" and "record 2: expected an integer" in str(caught.value)
    mera_rcb(tmp_path, [1, 1])
    error = refused(tmp_path, "rcb", "test")
    assert (error.line, error.field) == (2, "idx") and "duplicate idx 1" in str(error)


def test_parus_question_must_be_cause_or_effect(tmp_path):
    path = write_jsonl(tmp_path / "PARus" / "val.jsonl", [{**PARUS, "idx": 0, "question": "why"}])
    assert str(refused(tmp_path, "parus")) == f"{path}:1: field 'question': expected cause or effect, got 'why'"


def split_of(task, idx):
    return Split(get_task(task), "test", [Example(idx=i, fields={}) for i in idx], "test.jsonl", "")


def test_written_ids_must_be_the_splits_each_once():
    split = split_of("parus", [0, 1, 2])
    check_written_ids(split, [2, 0, 1])  # any order
    for written, problem in [
        ([0, 1], "1 of the split's ids are not written (idx 2, ...)"),
        ([0, 1, 2, 3], "idx 3 is not in the split"),
        ([0, 1, 1, 2], "idx 1 is written 2 times"),
        ([0, 1, "2"], "idx '2' is not in the split"),
        ([0, True, 2], "idx True is not in the split"),
    ]:
        with pytest.raises(RuevalError, match="test.jsonl: the submission's ids do not match the test split") as caught:
            check_written_ids(split, written)
        assert problem in str(caught.value)


def test_written_ids_are_compared_at_their_depth_rucos_queries_and_muserc_answers():
    rucos = split_of("rucos", [(5, 12), (6, 13)])
    check_written_ids(rucos, submission_ids(submission_lines(get_task("rucos"), rucos.examples, ["а", "б"])))
    with pytest.raises(RuevalError, match="idx 12 names 2 examples of the split"):
        check_written_ids(split_of("rucos", [(5, 12), (6, 12)]), [12, 12])
    muserc = split_of("muserc", [(0, 0, 0), (0, 0, 1), (1, 2, 3)])
    lines = submission_lines(get_task("muserc"), muserc.examples, [1, 0, 1])
    assert submission_ids(lines) == [(0, 0, 0), (0, 0, 1), (1, 2, 3)]
    check_written_ids(muserc, submission_ids(lines))
    lines[1]["passage"]["questions"][0]["answers"][0]["idx"] = 7
    with pytest.raises(RuevalError, match="idx 1/2/7 is not in the split"):
        check_written_ids(muserc, submission_ids(lines))
    assert submission_ids([{"outputs": "1", "meta": {"id": 4}}]) == [4]  # MERA's entries


def test_a_submission_with_a_bad_test_idx_writes_nothing(cli, data_dir, tmp_path):
    test = data_dir / "PARus" / "test.jsonl"
    lines = test.read_text(encoding="utf-8").splitlines()
    test.write_text("\n".join([lines[0].replace('"idx": 0', '"idx": "0"'), *lines[1:]]) + "\n", encoding="utf-8")
    result = cli("submit", "-m", "majority", "--data", data_dir, "-o", tmp_path / "rsg.zip")
    assert result.exit_code == 2
    assert f"{test}:1: field 'idx': expected an integer as the id, got str '0'" in result.output
    assert not (tmp_path / "rsg.zip").exists()


def test_meras_export_refuses_a_run_whose_predictions_are_not_the_test_splits(cli, tmp_path):
    from test_mera import rcb, write_task

    root = tmp_path / "mera"
    write_task(root, "RCB", {"train": [rcb(1, "2"), rcb(2, "1")], "test": [rcb(7, "2"), rcb(8, "1")]})
    result = cli("run", "-m", "majority", "-t", "rcb", "--data", root, "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    write_task(root, "RCB", {"train": [rcb(1, "2"), rcb(2, "1")], "test": [rcb(7, "2"), rcb(9, "1")]})
    result = cli("export", "--format", "mera", tmp_path / "run", "-o", tmp_path / "mera.zip")
    assert result.exit_code == 2
    # the test file the predictions were computed from has changed: found by its checksum, before the ids
    assert result.output == (
        f"error: {root / 'RCB' / 'task.json'}: changed since the run computed rcb's predictions from it; "
        f"compute rcb again: rueval run --resume -o {tmp_path / 'run'}\n"
    )
    assert not (tmp_path / "mera.zip").exists()
