"""Files written atomically, and only with numbers JSON has: a NaN or infinite value is an error
naming the file and the field, and nothing is written."""

from __future__ import annotations

import math

import pytest

from rueval.core.errors import RuevalError
from rueval.core.files import write_json, write_jsonl


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_is_never_written_and_the_error_names_file_and_field(tmp_path, value):
    path = tmp_path / "results.json"
    data = {"tasks": {"rcb": {"metrics": {"macro_f1": 30.0, "accuracy": value}}}}
    with pytest.raises(RuevalError) as caught:
        write_json(path, data)
    assert str(caught.value) == f"{path}: field 'tasks.rcb.metrics.accuracy' is {value}, not a number; not written"
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_an_earlier_file_stays_as_it_was_when_its_new_version_has_a_nan(tmp_path):
    path = tmp_path / "predictions.jsonl"
    write_jsonl(path, [{"idx": 0, "score": -1.5}])
    with pytest.raises(RuevalError, match=r"predictions.jsonl:2: field 'scores\[0\]' is nan, not a number"):
        write_jsonl(path, [{"idx": 0, "scores": [-1.0]}, {"idx": 1, "scores": [math.nan]}])
    assert path.read_text(encoding="utf-8") == '{"idx": 0, "score": -1.5}\n'
