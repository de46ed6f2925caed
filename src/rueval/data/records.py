"""What a dataset record becomes: Examples, and the parsed JSON lines (Records) they come from.

This is the data layer's vocabulary: loaders, tasks and solvers all speak it. A ``Dataset`` is
what a loader needs to know of a task: its folder names, split files and record parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from rueval.errors import DataError, RuevalError


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Record:
    """A parsed JSON line with where it came from, for error messages."""

    data: Mapping[str, Any]
    file: str
    line: int
    position: int  # 0-based index among the file's records
    path: str = ""  # where a nested object sits in its line, e.g. "passage.questions[1]."

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

    def items(self, path: str) -> list[Record]:
        """The objects of a nested list (MuSeRC questions, RuCoS queries), each a Record."""
        records = []
        for i, data in enumerate(self.get(path, list)):
            item = f"{path}[{i}]"
            if not isinstance(data, Mapping):
                raise self.error(item, f"expected an object, got {type(data).__name__}")
            records.append(Record(data, self.file, self.line, self.position, f"{self.path}{item}."))
        return records


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

    name: str
    benchmark: str
    folder: str
    label_field: str
    split_files: Mapping[str, tuple[str, ...]]
    train_from: Dataset | None  # whose train split stands in when the dataset has none
    train_fields: Mapping[str, str]  # the lender's field names -> this dataset's
    data_dir: str  # a folder of the dataset's own files, read whatever the source; "" to find it under the roots

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def splits(self) -> tuple[str, ...]: ...

    def parse(self, record: Record) -> list[Example]: ...
