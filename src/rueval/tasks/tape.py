"""TAPE: its seven datasets and the benchmark (Taktasheva et al., 2022, Table 2 and Section 5.4)."""

from __future__ import annotations

from rueval.data.records import IdRule, Layout
from rueval.tasks.base import Task
from rueval.tasks.benchmark import Benchmark, Total
from rueval.tasks.shapes import Answer, Coreference, InlineChoice, MultiLabel

NAME = "tape"
# chegeka's question_id (integers) and ru_openbook's ID (text, "14-1486"); an idx where a record
# carries one (rueval perturb's copies); the other files have no id at all. The hub keeps
# dummy/{raw,episodes}/<task>/*.jsonl.
LAYOUT = Layout(
    IdRule(("ID", "question_id", "idx"), (int, str), required=False),
    "RussianNLP/tape",
    ("dummy/raw/*", "dummy/episodes/*"),
)
TAPE_SPLITS = {"train": ("train.jsonl",), "test": ("test.jsonl",)}
ETHICS_CONCEPTS = ("virtue", "moral", "law", "justice", "util")


def _ethics(name: str, title: str, prefix: str, description: str, alias: str) -> Task:
    return Task(
        name=name,
        benchmark=NAME,
        layout=LAYOUT,
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
        benchmark=NAME,
        layout=LAYOUT,
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
        benchmark=NAME,
        layout=LAYOUT,
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
        benchmark=NAME,
        layout=LAYOUT,
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
        benchmark=NAME,
        layout=LAYOUT,
        folder="chegeka",
        title="CheGeKa",
        description="open-domain trivia questions of the 'Своя игра' game",
        shape=Answer("question", alternatives=";"),  # its id, question_id: LAYOUT
        metrics=("token_f1", "exact_match"),
        split_files=TAPE_SPLITS,
        normalization="squad",
    ),
    _ethics("sit_ethics", "Ethics-1", "sit", "Ethics-1: which ethical concepts a situation concerns", "ethics1"),
    _ethics("per_ethics", "Ethics-2", "per", "Ethics-2: whether the characters act well by each concept", "ethics2"),
)

# Records per split of TAPE's own sets (the episodes files, the sets its tables score; a run of
# --tape-set raw scores every record, another count): Taktasheva et al. (2022), Table 2, |D_train| and
# |D_test| (Ethics-1 / Ethics-2 train 59 / 58; their test and MultiQ's printed "1k").
OFFICIAL_COUNTS = {
    "winograd": {"train": 60, "test": 986},
    "ru_worldtree": {"train": 47, "test": 629},
    "ru_openbook": {"train": 48, "test": 500},
    "multiq": {"train": 64, "test": 1000},
    "chegeka": {"train": 49, "test": 520},
    "sit_ethics": {"train": 59, "test": 1000},
    "per_ethics": {"train": 58, "test": 1000},
}

BENCHMARK = Benchmark(
    name=NAME,
    title="TAPE",
    tasks=TASKS,
    # Table 3's Avg column: the mean F1, and the mean accuracy (EM for MultiQ and CheGeKa)
    total=Total(tuple(task.name for task in TASKS), "Avg (F1 / Acc)", per_metric=("avg_f1", "avg_acc")),
    official_counts=OFFICIAL_COUNTS,
    references="rueval.report.reference:TAPE_ROWS",
)
