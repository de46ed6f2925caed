"""What a dataset record becomes: Examples, and the parsed JSON lines (Records) they come from.

This is the data layer's vocabulary: loaders, tasks and solvers all speak it. A ``Dataset`` is
what a loader needs to know of a task: its folder names, split files and record parser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from rueval.core.errors import DataError, RuevalError


@dataclass(frozen=True)
class IdRule:
    """Where a layout keeps a record's id, and what an id is there."""

    fields: tuple[str, ...]  # the first of them a record has is its id
    kinds: tuple[type, ...]  # int, and str for ids that are text (never empty)
    required: bool  # False: a file whose records have none numbers them by position

    def field_in(self, data: Mapping[str, Any]) -> str | None:
        """The id field a record has, if any."""
        return next((name for name in self.fields if name in data), None)


# A task of one's own (registered in Python) may give its records an idx, an integer or text, or none.
OWN_IDS = IdRule(("idx",), (int, str), required=False)


@dataclass(frozen=True)
class Layout:
    """How a benchmark's official files are laid out: where a record keeps its id, and the Hugging
    Face hub dataset holding them (``--data hf``: the files matching ``hub_files`` are fetched)."""

    ids: IdRule = OWN_IDS
    hub: str = ""  # a dataset repository id; "" where the benchmark has no copy on the hub
    hub_files: tuple[str, ...] = ()


OWN_LAYOUT = Layout()


@dataclass(frozen=True, slots=True)
class Example:
    """One unit that gets one prediction.

    Flat tasks give one example per record. MuSeRC gives one per answer option and RuCoS one
    per query; their ``idx`` is then the path of original idx values, e.g. (passage, question,
    answer), so predictions can be nested back for a leaderboard submission.
    """

    idx: Any
    fields: Mapping[str, Any]  # every field of the record, extras included (slices use them)
    label: Any = None  # class label | tuple of 0/1 per category | tuple of gold answer strings
    candidates: tuple[str, ...] = ()  # answer candidates given with the example, one per mention (RuCoS)
    group: Any = None  # MuSeRC: the question an answer belongs to (its EM is per question)

    @property
    def key(self) -> str:
        return "/".join(map(str, self.idx)) if isinstance(self.idx, tuple) else str(self.idx)

    def value(self, path: str) -> Any:
        """The field at a dotted path ("target.span1_text"), or None where there is none."""
        value: Any = self.fields
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    def text(self, path: str) -> str:
        """A text field by dotted path; null reads as no text. A missing field is an error, not an
        empty text: a solver given another task's examples (TERRa's for LiDiRus) must see it."""
        value = self.value(path)
        if value is None:
            parent, _, name = path.rpartition(".")
            container = self.value(parent) if parent else self.fields
            if not isinstance(container, Mapping) or name not in container:
                raise RuevalError(f"example {self.key}: field '{path}' is missing")
            return ""
        if not isinstance(value, str):
            raise RuevalError(f"example {self.key}: field '{path}' should be text, got {value!r:.60}")
        return value


class RecordFields(Mapping[str, Any]):
    """A record's fields kept as its JSON text (UTF-8) and parsed when read, the last few records
    read staying parsed: a large split then takes about its file's size in memory, where parsed
    records (a dict, a string per text) take twice that. A mapping like the parsed record, equal to
    it; what it gives is shared with the next reader, to read and never to change."""

    __slots__ = ("_text",)

    def __init__(self, text: bytes):
        self._text = text

    def __getitem__(self, name: str) -> Any:
        return _parsed(self._text)[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_parsed(self._text))

    def __len__(self) -> int:
        return len(_parsed(self._text))

    def __repr__(self) -> str:
        return repr(_parsed(self._text))


@lru_cache(maxsize=64)
def _parsed(text: bytes) -> dict[str, Any]:
    return json.loads(text)


@dataclass(frozen=True)
class Record:
    """A parsed JSON line with where it came from, for error messages."""

    data: Mapping[str, Any]
    file: str
    line: int
    position: int  # 0-based index among the file's records
    path: str = ""  # where a nested object sits in its line, e.g. "passage.questions[1]."
    ids: IdRule = OWN_IDS  # where its layout keeps a record's id (Layout.ids), and what an id is there

    def error(self, field: str | None, message: str) -> DataError:
        return DataError(self.file, message, line=self.line, field=None if field is None else self.path + field)

    def get(self, path: str, kind: type | tuple[type, ...] | None = None, default: Any = ...) -> Any:
        """The value at a dotted path ("passage.text"); a DataError if missing or mistyped."""
        value: Any = self.data
        for part in path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                if default is not ...:
                    return default
                raise self.error(path, "missing")
            value = value[part]
        if kind is not None and (not isinstance(value, kind) or _is_bool_for_int(value, kind)):
            raise self.error(path, f"expected {_kind_name(kind)}, got {type(value).__name__} {value!r:.60}")
        return value

    def id(self) -> Any:
        """The record's id by the rule of its layout (``ids``): an integer, or where the layout has
        text ids a non-empty string; its position among the file's records where the layout's ids are
        optional and it has none. A DataError if missing or mistyped."""
        rule = self.ids
        field = rule.field_in(self.data)
        if field is None:
            if rule.required:
                raise self.error(rule.fields[0], "missing; every record needs its id")
            return self.position
        value = self.data[field]
        empty = isinstance(value, str) and not value.strip()
        if isinstance(value, bool) or not isinstance(value, rule.kinds) or empty:
            expected = " or ".join("an integer" if kind is int else "a non-empty string" for kind in rule.kinds)
            raise self.error(field, f"expected {expected} as the id, got {_described(value)}")
        return value

    def items(self, path: str) -> list[Record]:
        """The objects of a nested list (MuSeRC questions, RuCoS queries), each a Record."""
        records = []
        for i, data in enumerate(self.get(path, list)):
            item = f"{path}[{i}]"
            if not isinstance(data, Mapping):
                raise self.error(item, f"expected an object, got {type(data).__name__}")
            records.append(Record(data, self.file, self.line, self.position, f"{self.path}{item}.", self.ids))
        return records


def _described(value: Any) -> str:
    kind = "null" if value is None else "boolean" if isinstance(value, bool) else type(value).__name__
    return kind if value is None else f"{kind} {value!r:.60}"


def _is_bool_for_int(value: Any, kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return isinstance(value, bool) and bool not in kinds


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "an object",
        bool: "a boolean",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


class Dataset(Protocol):
    """A task as the data layer sees it (rueval.tasks.Task is one)."""

    # read-only properties: a frozen dataclass's fields satisfy them
    @property
    def name(self) -> str: ...

    @property
    def benchmark(self) -> str: ...

    @property
    def layout(self) -> Layout: ...

    @property
    def folder(self) -> str: ...

    @property
    def label_field(self) -> str: ...

    @property
    def split_files(self) -> Mapping[str, tuple[str, ...]]: ...

    @property
    def train_from(self) -> Dataset | None:
        """Whose train split stands in when the dataset has none."""

    @property
    def train_fields(self) -> Mapping[str, str]:
        """The lender's field names -> this dataset's."""

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def splits(self) -> tuple[str, ...]: ...

    def parse(self, record: Record) -> list[Example]: ...
