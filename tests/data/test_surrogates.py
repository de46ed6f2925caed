"""A lone surrogate ("\\ud800": valid JSON, not Unicode text) in any text of a data file is refused when
the file is read, in one line naming the file, line and field, for RSG's, TAPE's and both of MERA's
layouts; a surrogate pair (an emoji written as JSON escapes) is ordinary text; and the request cache
keys and stores texts that hold one, should a server answer with one."""

from __future__ import annotations

import hashlib
import json

import pytest
from mera_files import LAYOUTS, chegeka, seven_tasks

from rueval.core.errors import DataError
from rueval.data.local import parse_json_line
from rueval.models.base import Generation, Loglikelihood
from rueval.models.cache import RequestCache, request_key


def replace_line(path, number: int, change) -> None:
    """Line ``number`` of a JSON Lines file, changed and written back as ASCII JSON (escapes kept)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = json.dumps(change(json.loads(lines[number - 1])))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def one_error(result, *expected: str) -> None:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    for text in expected:
        assert text in lines[0], lines[0]


@pytest.mark.parametrize(
    ("task", "file", "line", "field", "change"),
    [
        ("parus", "PARus/val.jsonl", 2, "premise", lambda r: {**r, "premise": "Лёд \ud800 растаял."}),
        (
            "muserc",
            "MuSeRC/val.jsonl",
            1,
            "passage.text",
            lambda r: {**r, "passage": {**r["passage"], "text": "\udfff"}},
        ),
        ("winograd", "winograd/test.jsonl", 3, "options[1]", lambda r: {**r, "options": [r["options"][0], "\udc80"]}),
        ("winograd", "winograd/test.jsonl", 1, "\udc80key", lambda r: {**r, "\udc80key": 1}),
    ],
)
def test_a_lone_surrogate_in_rsg_and_tape_files_is_one_error_naming_file_line_and_field(
    cli, data_dir, tmp_path, task, file, line, field, change
):  # noqa: E501
    replace_line(data_dir / file, line, change)
    result = cli("run", "--data", data_dir, "-t", task, "-m", "majority", "-o", tmp_path / "out")
    one_error(result, f"{file}:{line}", "lone surrogate", f"field '{field}'" if field.isascii() else "field")
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_lone_surrogate_in_meras_files_is_one_error_naming_the_record_and_field(cli, tmp_path, layout):
    tasks = seven_tasks()
    tasks["CheGeKa"]["train"][1] = chegeka(2, "Галлий", text="ЭТОТ МЕТАЛЛ <> тает.")
    data = LAYOUTS[layout](tmp_path / "mera", tasks)
    for file in data.rglob("*.json*"):  # the JSON escape written where the text has "<>"
        file.write_text(file.read_text(encoding="utf-8").replace("<>", "\\ud800"), encoding="utf-8")
    result = cli("run", "--data", data, "-t", "chegeka", "-m", "majority", "-o", tmp_path / "out")
    where = "train.jsonl:2: field 'inputs.text'" if layout == "dataset snapshot" else "field 'inputs.text': record 2"
    one_error(result, where, "lone surrogate")


def test_a_surrogate_pair_is_the_character_it_writes():
    line = json.dumps({"idx": 0, "premise": "Смешно 😀."})  # ASCII JSON: "\ud83d\ude00"
    assert "\\ud83d\\ude00" in line
    assert parse_json_line(line, "val.jsonl", 1)["premise"] == "Смешно 😀."
    with pytest.raises(DataError, match="val.jsonl:1: field 'premise'"):
        parse_json_line(line.replace("\\ude00", ""), "val.jsonl", 1)


def test_the_request_cache_keys_and_stores_a_text_with_a_lone_surrogate(tmp_path):
    valid = Loglikelihood("Вопрос: что?", " Ответ")
    payload = json.dumps(
        ["m", "Loglikelihood", {"context": valid.context, "continuation": " Ответ"}], ensure_ascii=False
    )
    assert request_key("m", valid) == hashlib.sha256(payload.encode()).hexdigest()  # valid text: the keys it had
    broken = Generation("Вопрос: \ud800?", max_new_tokens=4)
    cache = RequestCache(tmp_path / "cache.sqlite")
    key = request_key("m", broken)
    cache.put_many({key: "ответ \udfff", request_key("m", valid): {"logprob": -1.5, "text": "да"}})
    assert cache.get_many([key, request_key("m", valid)]) == {
        key: "ответ \udfff",
        request_key("m", valid): {"logprob": -1.5, "text": "да"},
    }
    cache.close()
