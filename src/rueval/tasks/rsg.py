"""The nine RussianSuperGLUE tasks (Shavrina et al., 2020, Table 1 and Section 3.2)."""

from __future__ import annotations

from typing import Any

from rueval.tasks.base import Example, Record, Task, parse_flat

RSG_SPLITS = {"train": ("train.jsonl",), "val": ("val.jsonl",), "test": ("test.jsonl",)}
NLI_LABELS = ("entailment", "not_entailment")
BOOL_LABELS = (True, False)
LIDIRUS_TAGS = ("knowledge", "lexical-semantics", "logic", "predicate-argument-structure")


def _without(data: Any, *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


def parse_muserc(task: Task, record: Record) -> list[Example]:
    """One example per answer option; answers of one question form a group (for EM)."""
    passage_idx = record.get("idx")
    text = record.get("passage.text", str)
    examples = []
    for question in record.items("passage.questions"):
        question_idx = question.get("idx")
        question_text = question.get("question", str)
        for answer in question.items("answers"):
            fields = {
                **_without(record.data, "passage"),
                **_without(question.data, "answers", "idx"),
                **_without(answer.data, "label", "idx"),
                "passage": text,
                "question": question_text,
                "answer": answer.get("text", str),
            }
            examples.append(
                Example(
                    idx=(passage_idx, question_idx, answer.get("idx")),
                    fields=fields,
                    label=task.parse_label(answer),
                    group=(passage_idx, question_idx),
                )
            )
    return examples


def parse_rucos(task: Task, record: Record) -> list[Example]:
    """One example per query; the passage's entity mentions are the answer candidates."""
    passage_idx = record.get("idx")
    text = record.get("passage.text", str)
    candidates = []
    for entity in record.items("passage.entities"):
        start, end = entity.get("start", int), entity.get("end", int)
        if not 0 <= start < end <= len(text):
            raise entity.error("end", f"span {start}:{end} lies outside the passage ({len(text)} characters)")
        candidates.append(text[start:end])
    examples = []
    for query in record.items("qas"):
        query_text = query.get("query", str)
        if "@placeholder" not in query_text:
            raise query.error("query", "has no @placeholder")
        label = None
        if "answers" in query.data:
            label = tuple(dict.fromkeys(a.get("text", str) for a in query.items("answers")))
            if not label:
                raise query.error("answers", "is empty; a labelled query needs at least one answer")
        fields = {**_without(record.data, "passage", "qas"), **_without(query.data, "answers", "idx"), "passage": text}
        examples.append(
            Example(
                idx=(passage_idx, query.get("idx")),
                fields=fields,
                label=label,
                candidates=tuple(candidates),
            )
        )
    return examples


def _json_string(label: Any) -> str:
    return str(label).lower()


TERRA = Task(
    name="terra",
    benchmark="rsg",
    folder="TERRa",
    description="textual entailment recognition",
    inputs=("premise", "hypothesis"),
    labels=NLI_LABELS,
    metrics=("accuracy",),
    split_files=RSG_SPLITS,
    parser=parse_flat,
)


RSG_TASKS = (
    Task(
        name="lidirus",
        benchmark="rsg",
        folder="LiDiRus",
        description="diagnostic NLI set with linguistic feature tags",
        inputs=("sentence1", "sentence2"),
        labels=NLI_LABELS,
        metrics=("mcc",),
        # Test-only: the heuristics paper takes label priors from TERRa's train split (Section 3.1).
        split_files={"train": ("train.jsonl",), "test": ("LiDiRus.jsonl", "test.jsonl")},
        train_from=TERRA,
        train_fields={"premise": "sentence1", "hypothesis": "sentence2"},
        parser=parse_flat,
        extra={"tags": LIDIRUS_TAGS},
    ),
    Task(
        name="rcb",
        benchmark="rsg",
        folder="RCB",
        description="Russian CommitmentBank: three-way NLI",
        inputs=("premise", "hypothesis"),
        labels=("entailment", "contradiction", "neutral"),
        metrics=("macro_f1", "accuracy"),
        split_files=RSG_SPLITS,
        parser=parse_flat,
    ),
    Task(
        name="parus",
        benchmark="rsg",
        folder="PARus",
        description="choice of plausible alternatives: cause or effect",
        inputs=("premise", "choice1", "choice2", "question"),
        labels=(0, 1),
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        parser=parse_flat,
        main_fields=("premise",),
    ),
    Task(
        name="muserc",
        benchmark="rsg",
        folder="MuSeRC",
        description="multi-sentence reading comprehension, each answer true or false",
        inputs=("passage.text", "passage.questions"),
        labels=(0, 1),
        metrics=("f1a", "question_em"),
        split_files=RSG_SPLITS,
        parser=parse_muserc,
        text_fields=("passage", "question", "answer"),
        main_fields=("passage",),
        nested=True,
    ),
    TERRA,
    Task(
        name="russe",
        benchmark="rsg",
        folder="RUSSE",
        description="word in context: same sense in both sentences?",
        inputs=("word", "sentence1", "sentence2"),
        labels=BOOL_LABELS,
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        parser=parse_flat,
        main_fields=("sentence1", "sentence2"),
        extra={"submission_label": _json_string},
    ),
    Task(
        name="rwsd",
        benchmark="rsg",
        folder="RWSD",
        description="Winograd schema: does the pronoun refer to the span?",
        inputs=("text", "target.span1_text", "target.span2_text"),
        labels=BOOL_LABELS,
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        parser=parse_flat,
        main_fields=("text",),
        extra={"submission_label": str},
    ),
    Task(
        name="danetqa",
        benchmark="rsg",
        folder="DaNetQA",
        description="yes/no questions on a passage",
        inputs=("question", "passage"),
        labels=BOOL_LABELS,
        metrics=("accuracy",),
        split_files=RSG_SPLITS,
        parser=parse_flat,
        main_fields=("passage",),
        extra={"submission_label": _json_string},
    ),
    Task(
        name="rucos",
        benchmark="rsg",
        folder="RuCoS",
        description="cloze reading comprehension: fill @placeholder with a passage entity",
        inputs=("passage.text", "passage.entities", "qas"),
        metrics=("token_f1", "exact_match"),
        split_files=RSG_SPLITS,
        parser=parse_rucos,
        text_fields=("passage", "query"),
        main_fields=("passage",),
        nested=True,
        normalization="rsg",
    ),
)
