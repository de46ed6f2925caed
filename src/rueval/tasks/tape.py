"""The seven TAPE datasets (Taktasheva et al., 2022, Table 2 and Section 5.4)."""

from __future__ import annotations

import re

from rueval.errors import RuevalError
from rueval.tasks.base import Example, Record, Task, parse_flat

TAPE_SPLITS = {"train": ("train.jsonl",), "test": ("test.jsonl",)}
LETTERS = ("A", "B", "C", "D")
ETHICS_CONCEPTS = ("virtue", "moral", "law", "justice", "util")
_OPTION_MARK = re.compile(r"\(([A-Z])\)")  # "(A)" opens an inline answer option


def split_options(question: str, where: str = "question") -> tuple[str, dict[str, str]]:
    """RuOpenBookQA / RuWorldTree inline options: "stem (A) x (B) y (C) z (D) w" -> (stem, {"A": "x", ...}).

    ``where`` names the question in the error raised when the options are not (A) to (D) in order,
    each with some text.
    """
    marks = list(_OPTION_MARK.finditer(question))
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


def parse_multiq(task: Task, record: Record) -> list[Example]:
    """Gold answers are the main answers' segments (every mention counts as correct)."""
    task.check_inputs(record)
    label = None
    if "main_answers" in record.data:
        label = tuple(dict.fromkeys(a.get("segment", str) for a in record.items("main_answers")))
        if not label:
            raise record.error("main_answers", "is empty; a labelled question needs at least one answer")
    return [Example(idx=record.data.get("idx", record.position), fields=record.data, label=label)]


def parse_chegeka(task: Task, record: Record) -> list[Example]:
    """An answer may list alternatives separated by ';', each one right (as MERA's CheGeKa scorer splits it)."""
    task.check_inputs(record)
    answer = record.get("answer", str, default=None)
    label = None if answer is None else tuple(a.strip() for a in answer.split(";") if a.strip()) or (answer,)
    return [Example(idx=record.data.get("question_id", record.position), fields=record.data, label=label)]


def _ethics(name: str, prefix: str, description: str, alias: str) -> Task:
    return Task(
        name=name,
        benchmark="tape",
        folder=name,
        description=description,
        inputs=("text",),
        categories=tuple(f"{prefix}_{concept}" for concept in ETHICS_CONCEPTS),
        metrics=("f1", "accuracy"),
        split_files=TAPE_SPLITS,
        parse=parse_flat,
        aliases=(alias,),
    )


def _multiple_choice(name: str, aliases: tuple[str, ...], description: str) -> Task:
    return Task(
        name=name,
        benchmark="tape",
        folder=name,
        description=description,
        inputs=("question",),
        labels=LETTERS,
        label_field="answer",
        metrics=("macro_f1", "accuracy"),
        split_files=TAPE_SPLITS,
        parse=parse_flat,
        aliases=aliases,
    )


TAPE_TASKS = (
    Task(
        name="winograd",
        benchmark="tape",
        folder="winograd",
        description="extended Winograd schema: does the reference point to the answer?",
        inputs=("text", "options", "reference", "answer"),
        labels=(0, 1),
        metrics=("macro_f1", "accuracy"),
        split_files=TAPE_SPLITS,
        parse=parse_flat,
    ),
    _multiple_choice("ru_openbook", ("openbook", "ruopenbookqa"), "elementary science QA with an open book of facts"),
    _multiple_choice("ru_worldtree", ("worldtree", "ruworldtree"), "elementary science exam QA"),
    Task(
        name="multiq",
        benchmark="tape",
        folder="multiq",
        description="multi-hop QA over two Wikipedia passages, answer extracted from the main text",
        inputs=("support_text", "main_text", "question"),
        metrics=("f1", "em"),
        split_files=TAPE_SPLITS,
        parse=parse_multiq,
        normalization="squad",
    ),
    Task(
        name="chegeka",
        benchmark="tape",
        folder="chegeka",
        description="open-domain trivia questions of the 'Своя игра' game",
        inputs=("question",),
        metrics=("f1", "em"),
        split_files=TAPE_SPLITS,
        parse=parse_chegeka,
        normalization="squad",
    ),
    _ethics("sit_ethics", "sit", "Ethics-1: which ethical concepts a situation concerns", "ethics1"),
    _ethics("per_ethics", "per", "Ethics-2: whether the characters act well by each concept", "ethics2"),
)
