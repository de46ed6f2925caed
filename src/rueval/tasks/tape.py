"""The seven TAPE datasets (Taktasheva et al., 2022, Table 2 and Section 5.4)."""

from __future__ import annotations

from rueval.tasks.base import LETTERS, Example, Record, Task, parse_flat

TAPE_SPLITS = {"train": ("train.jsonl",), "test": ("test.jsonl",)}
ETHICS_CONCEPTS = ("virtue", "moral", "law", "justice", "util")


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


def _ethics(name: str, title: str, prefix: str, description: str, alias: str) -> Task:
    return Task(
        name=name,
        benchmark="tape",
        folder=name,
        title=title,
        description=description,
        inputs=("text",),
        categories=tuple(f"{prefix}_{concept}" for concept in ETHICS_CONCEPTS),
        metrics=("binary_f1", "accuracy"),
        split_files=TAPE_SPLITS,
        parser=parse_flat,
        aliases=(alias,),
    )


def _multiple_choice(name: str, title: str, aliases: tuple[str, ...], description: str) -> Task:
    return Task(
        name=name,
        benchmark="tape",
        folder=name,
        title=title,
        description=description,
        inputs=("question",),
        labels=LETTERS,
        label_field="answer",
        metrics=("macro_f1", "accuracy"),
        split_files=TAPE_SPLITS,
        parser=parse_flat,
        inline_options=True,
        aliases=aliases,
    )


# In the column order of TAPE's Table 3.
TAPE_TASKS = (
    Task(
        name="winograd",
        benchmark="tape",
        folder="winograd",
        title="Winograd",
        description="extended Winograd schema: does the reference point to the answer?",
        inputs=("text", "options", "reference", "answer"),
        labels=(0, 1),
        metrics=("macro_f1", "accuracy"),
        split_files=TAPE_SPLITS,
        parser=parse_flat,
        main_fields=("text",),
    ),
    _multiple_choice("ru_worldtree", "RuWorldTree", ("worldtree", "ruworldtree"), "elementary science exam QA"),
    _multiple_choice(
        "ru_openbook", "RuOpenBookQA", ("openbook", "ruopenbookqa"), "elementary science QA with an open book of facts"
    ),
    Task(
        name="multiq",
        benchmark="tape",
        folder="multiq",
        title="MultiQ",
        description="multi-hop QA over two Wikipedia passages, answer extracted from the main text",
        inputs=("support_text", "main_text", "question"),
        metrics=("token_f1", "exact_match"),
        split_files=TAPE_SPLITS,
        parser=parse_multiq,
        main_fields=("support_text", "main_text"),
        normalization="squad",
    ),
    Task(
        name="chegeka",
        benchmark="tape",
        folder="chegeka",
        title="CheGeKa",
        description="open-domain trivia questions of the 'Своя игра' game",
        inputs=("question",),
        metrics=("token_f1", "exact_match"),
        split_files=TAPE_SPLITS,
        parser=parse_chegeka,
        normalization="squad",
    ),
    _ethics("sit_ethics", "Ethics-1", "sit", "Ethics-1: which ethical concepts a situation concerns", "ethics1"),
    _ethics("per_ethics", "Ethics-2", "per", "Ethics-2: whether the characters act well by each concept", "ethics2"),
)
