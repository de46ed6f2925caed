"""YAML task files from users, checked before lm-eval reads them: duplicate keys, alias bombs, recursive
aliases and lone surrogates are each one error naming the file and line, quickly and in little memory;
tags stay unresolved nodes (a ``!function`` is found, never imported)."""

from __future__ import annotations

import time
import tracemalloc

import pytest
import yaml

from rueval.core.errors import DataError, shown
from rueval.core.yaml_files import MAX_VALUES, composed


@pytest.fixture(params=["libyaml", "pure Python"], autouse=True)
def parser(request, monkeypatch):
    """Each test under both of PyYAML's parsers: libyaml's where it is built, PyYAML's own where not."""
    if request.param == "pure Python":
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML is built without libyaml here")
    return request.param


def billion_laughs(levels: int = 9) -> str:
    """The classic alias bomb: each level a list of nine aliases of the level below (9**9 texts in all)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    return "task: bomb\n" + "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_quickly_in_little_memory(tmp_path):
    file = tmp_path / "bomb.yaml"
    file.write_text(billion_laughs(), encoding="utf-8")
    tracemalloc.start()
    started = time.process_time()  # CPU time: the machine's load does not count
    try:
        with pytest.raises(DataError, match=f"more than {MAX_VALUES} values once its aliases are expanded") as refused:
            composed(file)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.process_time() - started < 2
    assert peak < 20 * 2**20
    assert str(refused.value).startswith(f"{file}:")


def test_aliases_within_the_bound_and_tags_are_composed_as_yaml_composes_them(tmp_path):
    file = tmp_path / "shared.yaml"
    text = 'base: &base {until: ["\\n"], max_gen_toks: 5}\ngeneration_kwargs: *base\nprocess_docs: !function utils.go\n'
    file.write_text(text, encoding="utf-8")
    node = composed(file)
    values = {key.value: value for key, value in node.value}
    assert values["generation_kwargs"] is values["base"]  # one node, shared, as PyYAML composes an alias
    assert (values["process_docs"].tag, values["process_docs"].value) == ("!function", "utils.go")


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("task: a\ndoc_to_text: x\ntask: b\n", 3, "task"),
        ("task: a\nmetadata:\n  version: 1\n  version: 2\n", 4, "version"),
        ("task: a\ngeneration_kwargs: {until: x, until: y}\n", 2, "until"),
        ("task: a\n'task': b\n", 2, "task"),
    ],
)
def test_a_key_given_twice_is_an_error_naming_its_line_and_the_key(tmp_path, text, line, field):
    file = tmp_path / "twice.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match="key given twice") as refused:
        composed(file)
    assert (refused.value.line, refused.value.field) == (line, field)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("task: a\nloop: &a [1, *a]\n", "contains itself"),
        ('task: a\ndoc_to_text: "x \\ud800 y"\n', "lone surrogate|invalid Unicode"),  # libyaml's own words
        ("task: a\nnested: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply|not valid YAML"),
        ("- not a mapping\n", "expected a mapping"),
    ],
)
def test_a_bad_document_is_one_error_naming_the_file(tmp_path, text, message):
    file = tmp_path / "bad.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message) as refused:
        composed(file)
    assert str(refused.value).startswith(str(file)) and "\n" not in str(refused.value)


def test_an_error_message_shows_a_part_of_a_large_value():
    shared = ["lol"] * 9
    for _ in range(9):
        shared = [shared] * 9  # 9**10 texts when rendered whole
    started = time.process_time()  # CPU time: the machine's load does not count
    assert len(shown(shared)) <= 60 and shown(shared).startswith("[[[[...], [...]")
    assert len(shown("x" * 10**6)) <= 60 and "..." in shown("x" * 10**6)
    assert time.process_time() - started < 1
