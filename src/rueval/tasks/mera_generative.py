"""MERA's generative text tasks, declared as rueval tasks of the benchmark "mera" (their data: MERA's
files, rueval.data.mera; their records' layout and MERA's settings: rueval.data.mera_generative_tasks;
their prompts: rueval.tasks.prompts.mera_generative; their scorers: rueval.scoring.mera_scorers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rueval.data.mera_tasks import NAME
from rueval.data.records import Record
from rueval.tasks.base import Task
from rueval.tasks.shapes import Answer, Shape

# MERA's files are read by rueval.data.mera; these are the names a snapshot's split files have
MERA_FILES = {"train": ("train.jsonl",), "val": ("dev.jsonl", "public_test.jsonl"), "test": ("test.jsonl",)}
PROMPTS = "rueval.tasks.prompts.mera_generative"


@dataclass(frozen=True)
class Graded(Shape):
    """An item whose gold its converter built for MERA's own scorer, kept as it is (a tuple): USE's
    [answer, type, id_task, variant, max points], a code task's expected result of each test."""

    fields: tuple[str, ...]
    answer: str

    @property
    def label_field(self) -> str:  # type: ignore[override]  # Shape's default; every shape is frozen
        return self.answer

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.fields

    def gold(self, record: Record) -> tuple[Any, ...] | None:
        return tuple(record.get(self.answer, list)) if self.answer in record.data else None


def _task(name: str, title: str, description: str, shape: Shape, metrics: tuple[str, ...], **more: Any) -> Task:
    return Task(
        name=name,
        benchmark=NAME,
        folder=title,
        title=title,
        description=description,
        shape=shape,
        metrics=metrics,
        split_files=MERA_FILES,
        prompt=f"{PROMPTS}:{name.upper()}",
        **more,
    )


def _arithmetic(name: str, title: str, description: str) -> Task:
    return _task(name, title, description, Answer("inputs"), ("exact_match",), normalization="exact")


TASKS = (
    _arithmetic("simplear", "SimpleAr", "simple arithmetic: the value of an expression"),
    _arithmetic("rumodar", "ruModAr", "modified arithmetic: an operation inferred from examples, applied"),
    _arithmetic("rumultiar", "ruMultiAr", "multistep arithmetic: the value of a nested expression"),
    _task("use", "USE", "the Unified State Exam in Russian: answers graded by the exam's rules",
          Graded(("task", "text"), "grade"), ("grade_norm",)),
    _task("rudetox", "ruDetox", "detoxification: a toxic text rewritten politely (not scored offline)",
          Answer("toxic_comment"), ()),
    _task("ruhumaneval", "ruHumanEval", "a Python function completed from its docstring, run on its tests",
          Graded(("function",), "results"), ("pass@1", "pass@5", "pass@10")),
    _task("rucodeeval", "ruCodeEval", "a Python function completed from its description, run on its tests",
          Graded(("function",), "results"), ("pass@1", "pass@5", "pass@10")),
)  # fmt: skip
