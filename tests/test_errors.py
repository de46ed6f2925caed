"""Bad input: exit code 2, one line naming file, line and field, no traceback, no results.json."""

import pytest
from conftest import write_jsonl

PARUS = {
    "idx": 0,
    "premise": "Стекло разбилось.",
    "choice1": "Мяч попал в окно.",
    "choice2": "Пошёл снег.",
    "question": "cause",
}


@pytest.fixture
def broken(tmp_path):
    """Run `rueval run` on one broken task and return (exit code, stderr, out dir)."""

    def run(cli, task, *extra):
        out = tmp_path / "out"
        result = cli("run", "-t", task, "-m", "majority", "--data", tmp_path / "data", "-o", out, *extra)
        return result.exit_code, result.stderr, out

    return run


def check(code, stderr, out, *expected):
    assert code == 2
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    for text in expected:
        assert text in lines[0]
    assert not (out / "results.json").exists()


def test_missing_task_folder(cli, tmp_path, broken):
    (tmp_path / "data").mkdir()
    check(*broken(cli, "parus"), "no folder for task parus")


def test_missing_split_file(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "train.jsonl", [{**PARUS, "label": 0}])
    check(*broken(cli, "parus", "--split", "val"), "PARus", "no val split", "val.jsonl")


def test_malformed_json_line(cli, tmp_path, broken):
    path = write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 0}])
    path.write_text(path.read_text(encoding="utf-8") + '{"idx": 1, "premise": \n', encoding="utf-8")
    write_jsonl(tmp_path / "data" / "PARus" / "train.jsonl", [{**PARUS, "label": 0}])
    check(*broken(cli, "parus"), "val.jsonl:2", "malformed JSON")


def test_missing_field(cli, tmp_path, broken):
    record = {k: v for k, v in PARUS.items() if k != "choice2"}
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}, {**record, "idx": 1, "label": 0}])
    check(*broken(cli, "parus"), "val.jsonl:2", "field 'choice2'", "missing")


def test_missing_nested_field(cli, tmp_path, broken):
    passage = {"text": "(1) Текст.", "questions": [{"idx": 0, "question": "Что?", "answers": [{"idx": 0, "label": 1}]}]}
    write_jsonl(tmp_path / "data" / "MuSeRC" / "val.jsonl", [{"idx": 0, "passage": passage}])
    check(*broken(cli, "muserc"), "val.jsonl:1", "field 'passage.questions[0].answers[0].text'", "missing")


def test_unknown_label(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 2}])
    check(*broken(cli, "parus"), "val.jsonl:1", "field 'label'", "unknown label 2", "expected one of: 0, 1")


def test_wrong_type(cli, tmp_path, broken):
    entities = [{"start": "0", "end": 5}]
    record = {"idx": 0, "passage": {"text": "Мосты Петербурга.", "entities": entities}, "qas": []}
    write_jsonl(tmp_path / "data" / "RuCoS" / "val.jsonl", [record])
    check(*broken(cli, "rucos"), "val.jsonl:1", "field 'passage.entities[0].start'", "expected an integer")


def test_partly_labelled_split(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}, {**PARUS, "idx": 1}])
    check(*broken(cli, "parus"), "val.jsonl:2", "missing gold answer")


def test_duplicate_idx(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}, {**PARUS, "label": 0}])
    check(*broken(cli, "parus"), "val.jsonl:2", "duplicate idx 0")


def test_empty_split(cli, tmp_path, broken):
    path = tmp_path / "data" / "PARus" / "val.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n\n", encoding="utf-8")
    check(*broken(cli, "parus"), "val.jsonl", "empty split")


def test_unlabelled_test_split_cannot_be_scored(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "test.jsonl", [PARUS])
    check(*broken(cli, "parus", "--split", "test"), "test.jsonl", "no gold labels", "rueval submit")


def test_not_utf8(cli, tmp_path, broken):
    path = tmp_path / "data" / "PARus" / "val.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes('{"premise": "Стекло"}\n'.encode("cp1251"))
    check(*broken(cli, "parus"), "val.jsonl", "not UTF-8")


def test_majority_without_train_data(cli, tmp_path, broken):
    write_jsonl(tmp_path / "data" / "PARus" / "val.jsonl", [{**PARUS, "label": 1}])
    check(*broken(cli, "parus"), "parus", "needs labelled train examples")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("-t", "superglue"), "unknown task 'superglue'"),
        (("-m", "gpt5"), "unknown model 'gpt5'"),
        (("--data", "/nonexistent/rsg"), "--data /nonexistent/rsg: no such directory or zip file"),
    ],
)
def test_unknown_names(cli, tmp_path, args, expected):
    result = cli("run", "-o", tmp_path / "out", *args)
    check(result.exit_code, result.stderr, tmp_path / "out", expected)


def test_unknown_split_is_refused_by_the_cli(cli, tmp_path):
    result = cli("run", "--split", "dev", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "Traceback" not in result.output + result.stderr
