"""RussianSuperGLUE: its nine tasks and the benchmark (Shavrina et al., 2020, Table 1 and Section 3.2)."""

from __future__ import annotations

from typing import Any

from rueval.data.records import IdRule, Layout
from rueval.tasks.base import Task
from rueval.tasks.benchmark import Benchmark, Total
from rueval.tasks.shapes import AnswerCheck, Choice, Cloze, PassageQuestion, SpanCoreference, Texts, WordInContext

NAME = "rsg"
# Every record, MuSeRC question and answer and RuCoS query has an integer idx (MERA's meta.id, an
# integer too, becomes the idx of its records). The hub keeps one zip per task under data/.
LAYOUT = Layout(IdRule(("idx",), (int,), required=True), "RussianNLP/russian_super_glue", ("data/*.zip",))
RSG_SPLITS = {"train": ("train.jsonl",), "val": ("val.jsonl",), "test": ("test.jsonl",)}
NLI_LABELS = ("entailment", "not_entailment")
BOOL_LABELS = (True, False)
LIDIRUS_TAGS = ("knowledge", "lexical-semantics", "logic", "predicate-argument-structure")


def _json_string(label: Any) -> str:
    return str(label).lower()


TERRA = Task(
    name="terra",
    benchmark=NAME,
    layout=LAYOUT,
    folder="TERRa",
    description="textual entailment recognition",
    shape=Texts(("premise", "hypothesis"), NLI_LABELS),
    metrics=("accuracy",),
    split_files=RSG_SPLITS,
)


TASKS = (
    Task(
        name="lidirus",
        benchmark=NAME,
        layout=LAYOUT,
        folder="LiDiRus",
        description="diagnostic NLI set with linguistic feature tags",
        shape=Texts(("sentence1", "sentence2"), NLI_LABELS),
        metrics=("mcc",),
        # Test-only: the heuristics paper takes label priors from TERRa's train split (Section 3.1).
        split_files={"train": ("train.jsonl",), "test": ("LiDiRus.jsonl", "test.jsonl")},
        train_from=TERRA,
        tags=LIDIRUS_TAGS,
    ),
    Task(
        name="rcb",
        benchmark=NAME,
        layout=LAYOUT,
        folder="RCB",
        description="Russian CommitmentBank: three-way NLI",
        shape=Texts(("premise", "hypothesis"), ("entailment", "contradiction", "neutral")),
        metrics=("avg_f1", "accuracy"),  # RSG's jiant: F1 averaged over the three classes
        split_files=RSG_SPLITS,
    ),
    Task(
        name="parus",
        benchmark=NAME,
        layout=LAYOUT,
        folder="PARus",
        description="choice of plausible alternatives: cause or effect",
        shape=Choice(("premise",), ("choice1", "choice2"), question="question", asks=("cause", "effect")),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
    ),
    Task(
        name="muserc",
        benchmark=NAME,
        layout=LAYOUT,
        folder="MuSeRC",
        description="multi-sentence reading comprehension, each answer true or false",
        shape=AnswerCheck(),
        metrics=("f1a", "question_em"),
        split_files=RSG_SPLITS,
    ),
    TERRA,
    Task(
        name="russe",
        benchmark=NAME,
        layout=LAYOUT,
        folder="RUSSE",
        description="word in context: same sense in both sentences?",
        shape=WordInContext("word", ("sentence1", "sentence2"), (("start1", "end1"), ("start2", "end2")), BOOL_LABELS),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        submission_label=_json_string,
    ),
    Task(
        name="rwsd",
        benchmark=NAME,
        layout=LAYOUT,
        folder="RWSD",
        description="Winograd schema: does the pronoun refer to the span?",
        shape=SpanCoreference("text", "target", BOOL_LABELS),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        submission_label=str,
    ),
    Task(
        name="danetqa",
        benchmark=NAME,
        layout=LAYOUT,
        folder="DaNetQA",
        description="yes/no questions on a passage",
        shape=PassageQuestion(passage="passage", question="question", labels=BOOL_LABELS),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        submission_label=_json_string,
    ),
    Task(
        name="rucos",
        benchmark=NAME,
        layout=LAYOUT,
        folder="RuCoS",
        description="cloze reading comprehension: fill @placeholder with a passage entity",
        shape=Cloze(),
        metrics=("token_f1", "exact_match"),
        split_files=RSG_SPLITS,
        normalization="record",
    ),
)

# Records per split: the official v1.1 files where they are at hand (TERRa, MuSeRC, RUSSE's val: the
# files of tatiana-iazykova/check_your_heuristic's resources/, RSG v1.1 as distributed), otherwise
# Shavrina et al. (2020), Table 1, "Samples" train/val/test. A MuSeRC record is a passage. LiDiRus has
# its test split only. RSG v1.1 revised RUSSE, DaNetQA and RuCoS (Fenogenova et al., 2022): Table 1's
# counts of those are the first version's, so only RUSSE's val (its file) is given, and a run of
# DaNetQA or RuCoS is not checked by its count.
OFFICIAL_COUNTS = {
    "lidirus": {"test": 1104},
    "rcb": {"train": 438, "val": 220, "test": 348},
    "parus": {"train": 500, "val": 100, "test": 400},
    "muserc": {"train": 500, "val": 100, "test": 322},
    "terra": {"train": 2616, "val": 307, "test": 3198},
    "russe": {"val": 8505},  # Table 1 prints 8,508, the first version's
    "rwsd": {"train": 606, "val": 204, "test": 154},
}

BENCHMARK = Benchmark(
    name=NAME,
    title="RussianSuperGLUE",
    tasks=TASKS,
    total=Total(tuple(task.name for task in TASKS)),  # the mean of the nine task scores (Section 3.2)
    official_counts=OFFICIAL_COUNTS,
    references="rueval.report.reference:RSG_ROWS",
    submission="rueval.run.submission:export_rsg",
)
