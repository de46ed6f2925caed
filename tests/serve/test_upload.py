"""A submission zip is checked against the gold before it is queued: every kind of bad zip is one
clear line naming the file, line and field, and the zip `rueval submit` writes is read back exactly."""

import io
import zipfile

import pytest
from board_support import members_of, write_gold, zip_of

from rueval.core.errors import RuevalError
from rueval.data.reading import ReadLimits
from rueval.serve.gold import Gold
from rueval.serve.upload import DEFAULT_LIMITS, UploadLimits, check_submission
from rueval.solvers.heuristics import HeuristicSolver


def refused(data: bytes, gold: Gold, limits: UploadLimits = DEFAULT_LIMITS) -> str:
    with pytest.raises(RuevalError) as caught:
        check_submission(data, gold, limits)
    return str(caught.value)


def test_the_zip_rueval_submit_writes_reads_back_as_the_solver_predicted(gold, submission_zip):
    checked = check_submission(submission_zip("heuristic"), gold)
    assert list(checked.predictions) == list(gold.tasks) and not checked.partial and checked.ignored == ()
    for name, gold_task in gold.tasks.items():
        solver = HeuristicSolver(seed=0)
        solver.fit(gold_task.task, gold_task.train.examples)
        assert checked.predictions[name] == solver.predict(gold_task.task, gold_task.examples), name


def test_muserc_answers_nested_under_question_and_passage_are_matched_by_their_path(gold, submission_zip):
    checked = check_submission(submission_zip("majority"), gold)
    assert len(checked.predictions["muserc"]) == len(gold.tasks["muserc"].examples) == 69
    assert set(checked.predictions["muserc"]) <= {0, 1}


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "empty file"),
        (b"not a zip at all", "not a zip archive"),
        (zip_of({}), "the zip is empty"),
        (zip_of({"PARus.json": "{}"}), "member PARus.json: not an RSG task file"),
        (zip_of({"../PARus.jsonl": "{}"}), "member ../PARus.jsonl: a path"),
        (zip_of({"/etc/PARus.jsonl": "{}"}), "a path"),
        (zip_of({"sub/PARus.jsonl": "{}"}), "a path"),
        (zip_of({"RCB.jsonl": "", "rcb.jsonl": ""}), "a second file for rcb"),
        # MERA's submission (another benchmark): its task files are JSON documents named otherwise
        (zip_of({"MultiQ.json": "{}", "RWSD.json": "{}"}), "not an RSG task file"),
    ],
)
def test_a_zip_that_is_not_a_submission_is_refused_with_a_clear_line(gold, data, message):
    assert message in refused(data, gold)


def test_a_zip_that_inflates_past_the_limit_is_refused_before_it_is_read(gold):
    bomb = zip_of({"PARus.jsonl": b"\n" * (3 * 2**20)})
    assert len(bomb) < 20_000
    assert "inflates to 3,145,728 bytes, over the limit of 1,048,576" in refused(
        bomb, gold, UploadLimits(inflated_bytes=2**20)
    )


def test_too_many_members_and_too_large_an_upload_are_refused(gold, submission_zip):
    many = zip_of({f"x{i}.jsonl": "" for i in range(40)})
    assert "40 files in the zip, over the limit of 32" in refused(many, gold)
    data = submission_zip("majority")
    assert "over the limit of 100" in refused(data, gold, UploadLimits(upload_bytes=100))


def test_a_line_longer_than_the_limit_is_refused_naming_it(gold):
    assert "PARus.jsonl:1: line longer than 1000 bytes: not read" in refused(
        zip_of({"PARus.jsonl": "x" * 5000}), gold, UploadLimits(read=ReadLimits(line_bytes=1000, hints=False))
    )


def test_a_member_is_read_as_data_files_are_without_naming_command_line_options(gold):
    """The data layer's reading (rueval.data.reading.JsonLines) within the upload's limits: an uploader has
    no --max-blank-lines to raise."""
    message = refused(zip_of({"PARus.jsonl": "\n" * 200_000}), gold)
    assert message.endswith("PARus.jsonl:100001: more than 100000 blank lines: not read") and "(raise" not in message


def parus_lines(gold: Gold) -> list[dict]:
    return [{"idx": e.idx, "label": 0} for e in gold.tasks["parus"].examples]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda lines: lines[:-1], "PARus.jsonl: no prediction for 1 of 20 test items: idx 19"),
        (lambda lines: [*lines, {"idx": 999, "label": 0}], "PARus.jsonl:21: field 'idx': 999 is not an id of"),
        (lambda lines: [*lines, lines[0]], "PARus.jsonl:21: field 'idx': 0 again (first on line 1)"),
        (
            lambda lines: [{"idx": "0", "label": 0}, *lines[1:]],
            "PARus.jsonl:1: field 'idx': expected an integer as the id",
        ),
        (lambda lines: [{"idx": True, "label": 0}, *lines[1:]], "expected an integer as the id, got boolean True"),
        (lambda lines: [{"label": 0}, *lines[1:]], "PARus.jsonl:1: field 'idx': missing"),
        (lambda lines: [{"idx": 0}, *lines[1:]], "PARus.jsonl:1: field 'label': missing"),
        (lambda lines: [{"idx": 0, "label": "1"}, *lines[1:]], "field 'label': \"1\" is not a label of PARus"),
        (lambda lines: [{"idx": 0, "label": 2}, *lines[1:]], "expected one of: 0, 1"),
        (lambda lines: [{"idx": 0, "label": True}, *lines[1:]], "true is not a label"),
    ],
)
def test_a_task_file_with_missing_extra_or_ill_typed_ids_or_labels_is_refused(gold, change, message):
    assert message in refused(zip_of({"PARus.jsonl": change(parus_lines(gold))}), gold)


def test_labels_are_read_as_the_official_sample_writes_them_and_as_json_booleans(gold):
    examples = gold.tasks["russe"].examples
    written = [{"idx": e.idx, "label": "true" if i % 2 else False} for i, e in enumerate(examples)]
    checked = check_submission(zip_of({"RUSSE.jsonl": written}), gold)
    assert checked.predictions["russe"] == [bool(i % 2) for i in range(len(examples))]
    assert "1 is not a label of RUSSE" in refused(zip_of({"RUSSE.jsonl": [{"idx": 0, "label": 1}]}), gold)


def test_a_malformed_line_or_text_that_is_not_utf8_names_its_line(gold):
    assert "PARus.jsonl:2: malformed JSON" in refused(zip_of({"PARus.jsonl": '{"idx": 0, "label": 0}\n{"idx"'}), gold)
    assert "PARus.jsonl:1: not UTF-8 text" in refused(zip_of({"PARus.jsonl": b"\xff\xfe{}"}), gold)
    assert "expected a JSON object" in refused(zip_of({"PARus.jsonl": "[1, 2]"}), gold)


def test_a_muserc_answer_out_of_place_names_its_path_in_the_line(gold, submission_zip):
    lines = members_of(submission_zip("majority"))["MuSeRC.jsonl"]
    lines[1]["passage"]["questions"][0]["answers"][0]["label"] = "yes"
    message = refused(zip_of({"MuSeRC.jsonl": lines}), gold)
    assert "MuSeRC.jsonl:2: field 'passage.questions[0].answers[0].label': \"yes\" is not a label" in message
    lines[1]["passage"]["questions"][0]["idx"] = 12345
    assert "is not an id of the MuSeRC test set" in refused(zip_of({"MuSeRC.jsonl": lines}), gold)


def test_tasks_the_gold_has_no_answers_for_are_ignored_and_named(tmp_path, submission_zip):
    partial_gold = Gold.load(write_gold(tmp_path / "gold", tasks=("rcb", "parus")))
    checked = check_submission(submission_zip("majority"), partial_gold)
    assert list(checked.predictions) == ["rcb", "parus"] and not checked.partial
    assert checked.ignored == ("lidirus", "muserc", "terra", "russe", "rwsd", "danetqa", "rucos")


def test_a_zip_with_some_of_the_gold_tasks_is_partial(gold, submission_zip):
    members = members_of(submission_zip("majority"))
    checked = check_submission(zip_of({"RCB.jsonl": members["RCB.jsonl"]}), gold)
    assert checked.partial and list(checked.predictions) == ["rcb"]


def test_an_encrypted_member_is_refused(gold, submission_zip):
    data = bytearray(zip_of({"PARus.jsonl": parus_lines(gold)}))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.infolist()[0]
    # set the encryption flag in the local and the central headers
    data[info.header_offset + 6] |= 1
    central = data.rfind(b"PK\x01\x02")
    data[central + 8] |= 1
    assert "encrypted" in refused(bytes(data), gold)


def test_no_error_shows_a_gold_answer(gold):
    """A wrong label is refused naming the label space, which the public data has, never the answer."""
    examples = gold.tasks["rucos"].examples
    message = refused(zip_of({"RuCoS.jsonl": [{"idx": examples[0].idx[-1], "label": 5}]}), gold)
    assert "expected the answer's text, got 5" in message
    assert not any(answer in message for e in examples for answer in e.label)
