"""The seven TAPE datasets (Taktasheva et al., 2022, Table 2 and Section 5.4)."""

from __future__ import annotations

from rueval.tasks.base import Task
from rueval.tasks.shapes import Answer, Coreference, InlineChoice, MultiLabel

TAPE_SPLITS = {"train": ("train.jsonl",), "test": ("test.jsonl",)}
ETHICS_CONCEPTS = ("virtue", "moral", "law", "justice", "util")


def _ethics(name: str, title: str, prefix: str, description: str, alias: str) -> Task:
    return Task(
        name=name,
        benchmark="tape",
        folder=name,
        title=title,
        description=description,
        shape=MultiLabel("text", tuple(f"{prefix}_{concept}" for concept in ETHICS_CONCEPTS)),
        metrics=("binary_f1", "accuracy"),
        split_files=TAPE_SPLITS,
        aliases=(alias,),
        prompt=f"rueval.tasks.prompts.ethics:{name.upper()}",
    )


def _multiple_choice(name: str, title: str, aliases: tuple[str, ...], description: str) -> Task:
    return Task(
        name=name,
        benchmark="tape",
        folder=name,
        title=title,
        description=description,
        shape=InlineChoice("question"),
        metrics=("macro_f1", "accuracy"),
        split_files=TAPE_SPLITS,
        aliases=aliases,
        prompt=f"rueval.tasks.prompts.science_qa:{name.upper()}",
    )


# In the column order of TAPE's Table 3.
TASKS = (
    Task(
        name="winograd",
        benchmark="tape",
        folder="winograd",
        title="Winograd",
        description="extended Winograd schema: does the reference point to the answer?",
        shape=Coreference(text="text", pronoun="reference", candidate="answer", options="options", labels=(0, 1)),
        metrics=("macro_f1", "accuracy"),
        split_files=TAPE_SPLITS,
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
        shape=Answer("question", ("support_text", "main_text"), answer="main_answers", span_of="main_text"),
        metrics=("token_f1", "exact_match"),
        split_files=TAPE_SPLITS,
        normalization="squad",
    ),
    Task(
        name="chegeka",
        benchmark="tape",
        folder="chegeka",
        title="CheGeKa",
        description="open-domain trivia questions of the 'Своя игра' game",
        shape=Answer("question", alternatives=";"),  # its id, question_id: rueval.data.records.ID_RULES
        metrics=("token_f1", "exact_match"),
        split_files=TAPE_SPLITS,
        normalization="squad",
    ),
    _ethics("sit_ethics", "Ethics-1", "sit", "Ethics-1: which ethical concepts a situation concerns", "ethics1"),
    _ethics("per_ethics", "Ethics-2", "per", "Ethics-2: whether the characters act well by each concept", "ethics2"),
)
