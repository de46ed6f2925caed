"""A split's ids as a submission writes them: the writers (the RSG leaderboard zip, MERA's export)
check the ids of the lines they are about to write against the split, and write nothing that does
not match: every example once, none missing, none added."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rueval.core.errors import RuevalError
from rueval.data.local import Split


def submission_ids(lines: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The ids a submission file's lines carry: a line's idx; MERA's meta.id; where a line nests its
    answers as MuSeRC's records do (passage.questions[].answers[]), each answer's (passage, question,
    answer) path."""
    ids: list[Any] = []
    for line in lines:
        passage = line.get("passage")
        if isinstance(passage, Mapping) and "questions" in passage:
            ids += [(line["idx"], q["idx"], a["idx"]) for q in passage["questions"] for a in q["answers"]]
        elif isinstance(line.get("meta"), Mapping):
            ids.append(line["meta"]["id"])
        else:
            ids.append(line["idx"])
    return ids


def check_written_ids(split: Split, written: Sequence[Any]) -> None:
    """A RuevalError unless ``written`` holds each of the split's ids once and nothing else. An id is
    compared at its own depth: a flat line's idx with each example's own id (the last of its path: a
    RuCoS query's), a nested path with the example's whole path. 2, "2" and true are three ids."""
    depth = len(_path(written[0])) if written else 1
    expected = Counter(_key(_path(example.idx)[-depth:]) for example in split.examples)
    problem = _mismatch(expected, Counter(_key(_path(idx)) for idx in written))
    if problem:
        message = f"the submission's ids do not match the {split.name} split: {problem}; not written"
        raise RuevalError(f"{split.file}: {message}")


def in_split_order(split: Split, ids: Sequence[Any], values: Sequence[Any]) -> list[Any]:
    """``values`` given for ``ids`` (a run's stored predictions) in the split's order; a RuevalError
    unless the ids are the split's, each once (the split's file changed since, or the run's files did)."""
    check_written_ids(split, ids)
    by_id = {_key(_path(idx)): value for idx, value in zip(ids, values, strict=True)}
    return [by_id[_key(_path(example.idx))] for example in split.examples]


def _mismatch(expected: Counter, given: Counter) -> str | None:
    """The first difference between the ids the split has and those written, if any."""
    for key, n in expected.items():
        if n > 1:
            return f"idx {_shown(key)} names {n} examples of the split"
    for key, n in given.items():
        if n > 1:
            return f"idx {_shown(key)} is written {n} times"
        if key not in expected:
            return f"idx {_shown(key)} is not in the split"
    missing = [key for key in expected if key not in given]
    return f"{len(missing)} of the split's ids are not written (idx {_shown(missing[0])}, ...)" if missing else None


def _path(idx: Any) -> tuple[Any, ...]:
    return tuple(idx) if isinstance(idx, tuple | list) else (idx,)


def _key(path: tuple[Any, ...]) -> tuple[tuple[str, Any], ...]:
    """A path that tells 2 from "2" and 1 from true (equal in Python, different ids)."""
    return tuple((type(part).__name__, part) for part in path)


def _shown(key: tuple[tuple[str, Any], ...]) -> str:
    return "/".join(repr(part) if isinstance(part, str) else str(part) for _, part in key)
