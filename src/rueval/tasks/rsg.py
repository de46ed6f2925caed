"""The nine RussianSuperGLUE tasks (Shavrina et al., 2020, Table 1 and Section 3.2)."""

from __future__ import annotations

from typing import Any

from rueval.tasks.base import Task
from rueval.tasks.shapes import AnswerCheck, Choice, Cloze, PassageQuestion, SpanCoreference, Texts, WordInContext

RSG_SPLITS = {"train": ("train.jsonl",), "val": ("val.jsonl",), "test": ("test.jsonl",)}
NLI_LABELS = ("entailment", "not_entailment")
BOOL_LABELS = (True, False)
LIDIRUS_TAGS = ("knowledge", "lexical-semantics", "logic", "predicate-argument-structure")


def _json_string(label: Any) -> str:
    return str(label).lower()


TERRA = Task(
    name="terra",
    benchmark="rsg",
    folder="TERRa",
    description="textual entailment recognition",
    shape=Texts(("premise", "hypothesis"), NLI_LABELS),
    metrics=("accuracy",),
    split_files=RSG_SPLITS,
)


TASKS = (
    Task(
        name="lidirus",
        benchmark="rsg",
        folder="LiDiRus",
        description="diagnostic NLI set with linguistic feature tags",
        shape=Texts(("sentence1", "sentence2"), NLI_LABELS),
        metrics=("mcc",),
        # Test-only: the heuristics paper takes label priors from TERRa's train split (Section 3.1).
        split_files={"train": ("train.jsonl",), "test": ("LiDiRus.jsonl", "test.jsonl")},
        train_from=TERRA,
        extra={"tags": LIDIRUS_TAGS},
    ),
    Task(
        name="rcb",
        benchmark="rsg",
        folder="RCB",
        description="Russian CommitmentBank: three-way NLI",
        shape=Texts(("premise", "hypothesis"), ("entailment", "contradiction", "neutral")),
        metrics=("avg_f1", "accuracy"),  # RSG's jiant: F1 averaged over the three classes
        split_files=RSG_SPLITS,
    ),
    Task(
        name="parus",
        benchmark="rsg",
        folder="PARus",
        description="choice of plausible alternatives: cause or effect",
        shape=Choice(("premise",), ("choice1", "choice2"), question="question", asks=("cause", "effect")),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
    ),
    Task(
        name="muserc",
        benchmark="rsg",
        folder="MuSeRC",
        description="multi-sentence reading comprehension, each answer true or false",
        shape=AnswerCheck(),
        metrics=("f1a", "question_em"),
        split_files=RSG_SPLITS,
    ),
    TERRA,
    Task(
        name="russe",
        benchmark="rsg",
        folder="RUSSE",
        description="word in context: same sense in both sentences?",
        shape=WordInContext("word", ("sentence1", "sentence2"), (("start1", "end1"), ("start2", "end2")), BOOL_LABELS),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        extra={"submission_label": _json_string},
    ),
    Task(
        name="rwsd",
        benchmark="rsg",
        folder="RWSD",
        description="Winograd schema: does the pronoun refer to the span?",
        shape=SpanCoreference("text", "target", BOOL_LABELS),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        extra={"submission_label": str},
    ),
    Task(
        name="danetqa",
        benchmark="rsg",
        folder="DaNetQA",
        description="yes/no questions on a passage",
        shape=PassageQuestion(passage="passage", question="question", labels=BOOL_LABELS),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        extra={"submission_label": _json_string},
    ),
    Task(
        name="rucos",
        benchmark="rsg",
        folder="RuCoS",
        description="cloze reading comprehension: fill @placeholder with a passage entity",
        shape=Cloze(),
        metrics=("token_f1", "exact_match"),
        split_files=RSG_SPLITS,
        normalization="rsg",
    ),
)
