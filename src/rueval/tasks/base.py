"""Example and Task: what a dataset record becomes, and how each task is declared."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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


Parser = Callable[["Task", Record], list[Example]]


@dataclass(frozen=True)
class Task:
    """A dataset declared once: its fields, labels, metrics and files.

    ``kind`` follows from the declaration: a fixed label space (classification), per-category
    binary targets (multilabel, Ethics), or free answer strings (span).
    """

    name: str
    benchmark: str  # "rsg" or "tape"
    folder: str  # the official folder name
    description: str
    inputs: tuple[str, ...]  # fields every record must have (dotted paths for nested ones)
    metrics: tuple[str, ...]  # headline metrics, names from rueval.metrics; the task score is their mean
    split_files: Mapping[str, tuple[str, ...]]  # split -> accepted file names, first match wins
    parse: Parser
    labels: tuple[Any, ...] = ()  # classification label space, as written in the data
    categories: tuple[str, ...] = ()  # multilabel target fields
    label_field: str = "label"
    aliases: tuple[str, ...] = ()
    train_task: str | None = None  # where label priors come from when the task has no train split
    extra: Mapping[str, Any] = field(default_factory=dict)  # task-specific settings (e.g. LiDiRus tag fields)
    normalization: str = ""  # span tasks: how answers are normalised before matching (rueval.metrics.NORMALIZATIONS)

    @property
    def kind(self) -> str:
        if self.categories:
            return "multilabel"
        return "classification" if self.labels else "span"

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(self.split_files)

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the task answers to, lower-cased: for the CLI and for finding folders."""
        return tuple(dict.fromkeys(n.lower() for n in (self.name, self.folder, *self.aliases)))

    def parse_label(self, record: Record) -> Any:
        """The record's gold class label matched against the label space, or None if absent."""
        if self.label_field not in record.data:
            return None
        value = record.data[self.label_field]
        for label in self.labels:
            if _label_text(value) == _label_text(label):
                return label
        expected = ", ".join(map(_label_text, self.labels))
        raise record.error(self.label_field, f"unknown label {value!r}; expected one of: {expected}")

    def check_inputs(self, record: Record) -> None:
        for path in self.inputs:
            record.get(path)


def _label_text(value: Any) -> str:
    """How a label reads in JSON text: true and "true" match, 1 and true do not."""
    return str(value).lower() if isinstance(value, bool | str) else str(value)


def parse_flat(task: Task, record: Record) -> list[Example]:
    """One example per record: classification or multilabel tasks with top-level fields."""
    task.check_inputs(record)
    if task.categories:
        present = [c for c in task.categories if c in record.data]
        label = tuple(_binary(record, c) for c in task.categories) if present else None
    else:
        label = task.parse_label(record)
    return [Example(idx=record.data.get("idx", record.position), fields=record.data, label=label)]


def _binary(record: Record, category: str) -> int:
    value = record.get(category, (int, bool))
    if value not in (0, 1):
        raise record.error(category, f"expected 0 or 1, got {value!r}")
    return int(value)
