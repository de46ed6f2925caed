"""Task: each dataset declared once, as plain data, with everything the rest of rueval needs to know about it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rueval.data.records import OWN_LAYOUT, Example, Layout, Record
from rueval.tasks.inline_options import split_options
from rueval.tasks.shapes import InlineChoice, Shape

PROMPTS_PACKAGE = "rueval.tasks.prompts"


@dataclass(frozen=True)
class Task:
    """A dataset declared once: its shape (fields and labels), metrics, files and prompt.

    ``kind`` follows from the shape: a fixed label space (classification), per-category binary
    targets (multilabel, Ethics), or free answer strings (span).
    """

    name: str
    benchmark: str  # the name of its benchmark (rueval.tasks.benchmark.Benchmark); a task of one's own names its own
    folder: str  # the official folder name
    description: str
    shape: Shape
    metrics: tuple[str, ...]  # headline metrics, names from rueval.scoring.metrics; the task score is their mean
    split_files: Mapping[str, tuple[str, ...]]  # split -> accepted file names, first match wins
    aliases: tuple[str, ...] = ()
    train_from: Task | None = None  # whose train split gives label priors when the task has none
    layout: Layout = OWN_LAYOUT  # where its official files keep a record's id, and their copy on the hub
    tags: tuple[str, ...] = ()  # fields tagging an example's linguistic features: scored per tag (LiDiRus)
    # a field grouping its examples: every metric also on each group's examples (MERA's acc.<domain>)
    breakdown_by: str = ""
    # how the official submission writes a label (RUSSE's "true"); None: as it is
    submission_label: Callable[[Any], Any] | None = None
    normalization: str = (
        ""  # span tasks: how answers are normalised before matching (rueval.scoring.metrics.NORMALIZATIONS)
    )
    title: str = ""  # the name the papers print; the folder's name unless they print another
    # How its examples are asked: "module:NAME" of a TaskPrompt (default: rueval.tasks.prompts.<name>:PROMPT)
    prompt: str = ""

    def __post_init__(self) -> None:
        # frozen: the defaults that follow from other fields are set once, here
        object.__setattr__(self, "title", self.title or self.folder)
        object.__setattr__(self, "prompt", self.prompt or f"{PROMPTS_PACKAGE}.{self.name}:PROMPT")
        lender = self.train_from  # its texts are read as this task's, in order
        if lender and (type(lender.shape), len(lender.text_fields)) != (type(self.shape), len(self.text_fields)):
            raise ValueError(f"{self.name} learns from {lender.name}, whose examples have another shape")

    # The record layout, from the shape
    @property
    def inputs(self) -> tuple[str, ...]:
        return self.shape.inputs

    @property
    def text_fields(self) -> tuple[str, ...]:
        return self.shape.texts

    @property
    def main_fields(self) -> tuple[str, ...]:
        return self.shape.main

    @property
    def labels(self) -> tuple[Any, ...]:
        return self.shape.labels

    def labels_of(self, example: Example) -> tuple[Any, ...]:
        """The labels this example can take: the label space, or a multiple-choice item's own letters."""
        return self.shape.labels_of(example.fields)

    @property
    def categories(self) -> tuple[str, ...]:
        return self.shape.categories

    @property
    def label_field(self) -> str:
        return self.shape.label_field

    @property
    def nested(self) -> bool:
        return self.shape.nested

    @property
    def inline_options(self) -> bool:
        return isinstance(self.shape, InlineChoice)

    @property
    def train_fields(self) -> Mapping[str, str]:
        """The lender's field names -> this task's (LiDiRus reads TERRa's premise as its sentence1)."""
        if self.train_from is None:
            return {}
        return dict(zip(self.train_from.text_fields, self.text_fields, strict=True))

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
        return self.shape.parse(record)

    def question_options(self, question: str, where: str) -> tuple[str, dict[str, str]]:
        """The stem and the options (A), (B), ... of a question with inline options."""
        return split_options(question, where)


__all__ = ["Example", "Record", "Task"]
