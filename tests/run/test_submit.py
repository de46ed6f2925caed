"""The leaderboard zip has the shape of the official sample submission, file by file and field by field."""

from __future__ import annotations

import json
import zipfile
from typing import Any

import pytest
from support import read_jsonl

from rueval.data.local import SAMPLES_DIR
from rueval.run.submission import submission_lines
from rueval.tasks import Example, get_task

# A few lines of each file of the official sample submission (RussianNLP/RussianSuperGLUE,
# sample_submission.zip), written out here: its shapes and label values.
OFFICIAL_SAMPLE = {
    "DaNetQA.jsonl": ['{"idx": 0, "label": "true"}', '{"idx": 1, "label": "false"}'],
    "LiDiRus.jsonl": ['{"idx": 0, "label": "not_entailment"}', '{"idx": 9, "label": "entailment"}'],
    "MuSeRC.jsonl": [
        (
            '{"idx": 0, "passage": {"questions": [{"idx": 0, "answers": '
            '[{"idx": 0, "label": 1}, {"idx": 1, "label": 0}]},'
            ' {"idx": 1, "answers": [{"idx": 2, "label": 0}]}]}}'
        )
    ],
    "PARus.jsonl": ['{"idx": 0, "label": 0}', '{"idx": 1, "label": 1}'],
    "RCB.jsonl": [
        '{"idx": 0, "label": "neutral"}',
        '{"idx": 1, "label": "entailment"}',
        '{"idx": 5, "label": "contradiction"}',
    ],
    "RUSSE.jsonl": ['{"idx": 0, "label": "false"}', '{"idx": 3, "label": "true"}'],
    "RWSD.jsonl": ['{"idx": 0, "label": "False"}', '{"idx": 4, "label": "True"}'],
    "RuCoS.jsonl": ['{"idx": 0, "label": "Косово."}', '{"idx": 1, "label": "Германии"}'],
    "TERRa.jsonl": ['{"idx": 0, "label": "not_entailment"}', '{"idx": 1, "label": "entailment"}'],
}
FREE_LABELS = {"RuCoS.jsonl"}  # any entity text; every other file's labels come from a fixed set


def shape(value: Any) -> Any:
    """Keys and value types, recursively; a list by the shapes of its items."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(shape(item), sort_keys=True) for item in value})
    return type(value).__name__


def labels(value: Any) -> set[Any]:
    if isinstance(value, dict):
        own = {value["label"]} if "label" in value else set()
        return own.union(*(labels(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(labels(item) for item in value))
    return set()


@pytest.fixture
def submission(cli, tmp_path):
    target = tmp_path / "rsg.zip"
    result = cli("submit", "-m", "weighted-random", "-o", target)
    assert result.exit_code == 0, result.stderr
    with zipfile.ZipFile(target) as archive:
        return {
            name: [json.loads(line) for line in archive.read(name).decode().splitlines()] for name in archive.namelist()
        }


def test_every_file_has_the_official_shape_and_label_values(submission):
    assert sorted(submission) == sorted(OFFICIAL_SAMPLE)
    for name, sample_lines in OFFICIAL_SAMPLE.items():
        official = [json.loads(line) for line in sample_lines]
        expected_shapes = {json.dumps(shape(line), sort_keys=True) for line in official}
        assert submission[name], name
        for line in submission[name]:
            assert json.dumps(shape(line), sort_keys=True) in expected_shapes, (name, line)
        if name not in FREE_LABELS:
            allowed = set().union(*(labels(line) for line in official))
            assert set().union(*(labels(line) for line in submission[name])) <= allowed, name


def test_rucos_has_one_line_per_query_with_the_query_idx(submission):
    queries = [q["idx"] for record in read_jsonl(SAMPLES_DIR / "RuCoS" / "test.jsonl") for q in record["qas"]]
    assert [line["idx"] for line in submission["RuCoS.jsonl"]] == queries
    task = get_task("rucos")
    examples = [Example(idx=(5, 12), fields={}), Example(idx=(5, 13), fields={}), Example(idx=(6, 14), fields={})]
    assert submission_lines(task, examples, ["ЕС", "Германии", "Косово"]) == [
        {"idx": 12, "label": "ЕС"},
        {"idx": 13, "label": "Германии"},
        {"idx": 14, "label": "Косово"},
    ]


def test_muserc_nests_answers_under_their_question_and_passage():
    task = get_task("muserc")
    idx = [(0, 0, 0), (0, 0, 1), (0, 1, 2), (1, 2, 3)]
    lines = submission_lines(task, [Example(idx=i, fields={}) for i in idx], [1, 0, 0, 1])
    assert lines == [
        {
            "idx": 0,
            "passage": {
                "questions": [
                    {"idx": 0, "answers": [{"idx": 0, "label": 1}, {"idx": 1, "label": 0}]},
                    {"idx": 1, "answers": [{"idx": 2, "label": 0}]},
                ]
            },
        },
        {"idx": 1, "passage": {"questions": [{"idx": 2, "answers": [{"idx": 3, "label": 1}]}]}},
    ]
