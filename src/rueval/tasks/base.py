"""Task: each dataset declared once, with everything the rest of rueval needs to know about it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rueval.data.records import Example, Record
from rueval.errors import RuevalError

LETTERS = ("A", "B", "C", "D")
OPTION_MARK = re.compile(r"\(([A-Z])\)")  # "(A)" opens an inline answer option


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
    parser: Parser
    # An example's input texts, in reading order (text, or lists of texts such as Winograd's options),
    # and the main text among them, which slices measure (a MuSeRC question's answers share its passage).
    text_fields: tuple[str, ...] = ()
    main_fields: tuple[str, ...] = ()
    nested: bool = False  # several examples per record (MuSeRC answers, RuCoS queries)
    inline_options: bool = False  # the question holds its options: "stem (A) x (B) y (C) z (D) w"
    labels: tuple[Any, ...] = ()  # classification label space, as written in the data
    categories: tuple[str, ...] = ()  # multilabel target fields
    label_field: str = "label"
    aliases: tuple[str, ...] = ()
    train_from: Task | None = None  # whose train split gives label priors when the task has none
    train_fields: Mapping[str, str] = field(default_factory=dict)  # the lender's field names -> this task's
    extra: Mapping[str, Any] = field(default_factory=dict)  # task-specific settings (e.g. LiDiRus tag fields)
    normalization: str = ""  # span tasks: how answers are normalised before matching (rueval.metrics.NORMALIZATIONS)
    title: str = ""  # the name the papers print; the folder's name unless they print another

    def __post_init__(self) -> None:
        # frozen: the defaults that follow from other fields are set once, here
        object.__setattr__(self, "title", self.title or self.folder)
        object.__setattr__(self, "text_fields", self.text_fields or self.inputs)
        object.__setattr__(self, "main_fields", self.main_fields or self.text_fields)

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

    def parse(self, record: Record) -> list[Example]:
        """The examples of one record; a DataError naming the record's file, line and field if it is bad."""
        return self.parser(self, record)

    def question_options(self, question: str, where: str) -> tuple[str, dict[str, str]]:
        """The stem and the options (A)-(D) of a question with inline options."""
        return split_options(question, where)

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
        """Every input field is there, every text field holds text, inline options can be read."""
        for path in self.inputs:
            record.get(path)
        for path in self.text_fields:
            value = record.get(path, (str, list))
            if isinstance(value, list) and not all(isinstance(item, str) for item in value):
                raise record.error(path, f"expected a list of texts, got {value!r:.60}")
        if self.inline_options:
            try:
                self.question_options(record.get("question", str), "question")
            except RuevalError as e:
                raise record.error("question", str(e).removeprefix("question: ")) from None


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
    return [Example(idx=record.id(task.benchmark), fields=record.data, label=label)]


def _binary(record: Record, category: str) -> int:
    value = record.get(category, (int, bool))
    if value not in (0, 1):
        raise record.error(category, f"expected 0 or 1, got {value!r}")
    return int(value)


def split_options(question: str, where: str = "question") -> tuple[str, dict[str, str]]:
    """RuOpenBookQA / RuWorldTree inline options: "stem (A) x (B) y (C) z (D) w" -> (stem, {"A": "x", ...}).

    ``where`` names the question in the error raised when the options are not (A) to (D) in order,
    each with some text.
    """
    marks = list(OPTION_MARK.finditer(question))
    found = [mark.group(1) for mark in marks]
    if found != list(LETTERS):
        shown = " ".join(f"({letter})" for letter in found) or "none"
        expected = "expected inline options (A) (B) (C) (D) in order"
        raise RuevalError(f"{where}: {expected}, found {shown}: {question!r:.120}")
    ends = [mark.start() for mark in marks[1:]] + [len(question)]
    options = {mark.group(1): question[mark.end() : end].strip() for mark, end in zip(marks, ends, strict=True)}
    empty = [letter for letter, text in options.items() if not text]
    if empty:
        raise RuevalError(f"{where}: option ({empty[0]}) has no text: {question!r:.120}")
    return question[: marks[0].start()].strip(), options
