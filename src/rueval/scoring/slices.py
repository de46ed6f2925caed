"""Subpopulations (slices) of an evaluation set, after TAPE's diagnostic report (Taktasheva et al., 2022,
Section 3.3 and Table 2): scores per text length, domain, gold class, answer category, exam and school
grade, readability, lexical diversity, gender and number of the candidate, and number of candidates.

A slice is a small plug-in: a name, the tasks it applies to and a function mapping an example to a
bucket label (or None: the example is left out of that slice). Slices look at the input and the gold
answer only, never at predictions, so every model is cut the same way.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.progress import progress
from rueval.core.text import lemmas, parse, sentences, words
from rueval.scoring.task_scores import score_task
from rueval.tasks import TASKS, Example, Task

# Measures of a text are cached: a MuSeRC passage is measured once for its ~24 answers, a RuCoS
# passage once for its queries (consecutive examples, so a small cache holds them).
TEXT_CACHE = 4096

# Buckets with fewer examples get their size but no metrics: MCC and macro-F1 of a single
# example say nothing. For MuSeRC the count is of questions, since its EM is per question.
MIN_BUCKET_SIZE = 2

ALL_TASKS = tuple(TASKS)
QA_TASKS = ("ru_openbook", "ru_worldtree", "multiq", "chegeka", "rucos")
# Within one gold class MCC is 0 and F1a of the negative class is 0 by definition; accuracy (the
# class's recall) still tells something, so the class slice is for tasks scored by accuracy.
CLASS_TASKS = tuple(name for name, t in TASKS.items() if t.kind == "classification" and "accuracy" in t.metrics)


@dataclass(frozen=True)
class Slice:
    """A way of cutting a task's examples into buckets."""

    name: str
    description: str
    tasks: tuple[str, ...]
    bucket: Callable[[Task, Example], str | None]
    order: tuple[str, ...] = ()  # bucket display order for ranges; others sort naturally

    def sort_key(self, label: str) -> tuple[int, Any]:
        if label in self.order:
            return (0, self.order.index(label))
        return (1, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)])


def _range_of(value: float, edges: Sequence[float], labels: Sequence[str]) -> str:
    """The label of the range [edge_i, edge_i+1) that holds value."""
    position = sum(value >= edge for edge in edges)
    return labels[position]


def text_of(task: Task, example: Example) -> str:
    """The example's main text (the task's ``main_fields``), joined with newlines."""
    return "\n".join(example.text(name) for name in task.main_fields)


# Length in words (razdel tokens with a letter or digit); the ranges double, since TAPE's texts
# run from a one-line CheGeKa question to two MultiQ passages.
LENGTH_EDGES = (11, 21, 41, 81, 161, 321)
LENGTH_LABELS = tuple(f"{span} words" for span in ("1-10", "11-20", "21-40", "41-80", "81-160", "161-320", "321+"))


@lru_cache(maxsize=TEXT_CACHE)
def word_count(text: str) -> int:
    return len(words(text))


def length_bucket(task: Task, example: Example) -> str | None:
    count = word_count(text_of(task, example))
    return _range_of(count, LENGTH_EDGES, LENGTH_LABELS) if count else None


def source_bucket(task: Task, example: Example) -> str | None:
    source = example.fields.get("source")
    return str(source) if source not in (None, "") else None


def class_bucket(task: Task, example: Example) -> str | None:
    return None if example.label is None else str(example.label)


def gold_answer_text(task: Task, example: Example) -> str | None:
    """The gold answer as text: the chosen option for multiple choice, the first gold string for QA.
    A question whose inline options cannot be read has no answer text (and no answer bucket)."""
    if example.label is None:
        return None
    if task.kind == "span":
        return example.label[0] if example.label else None
    try:
        _, options = task.question_options(str(example.fields.get("question", "")), "question")
    except RuevalError:
        return None
    return options.get(example.label)


def answer_category(answer: str) -> str:
    """A plain answer type: "number" (a digit or a numeral), "person" (a capitalised word that pymorphy3
    tags as a first name, surname or patronymic), "place" (a capitalised geographical name), else "other"."""
    found = words(answer)
    if any(ch.isdigit() for ch in answer) or any("NUMR" in parse(w).tag for w in found):
        return "number"
    capitalised = [parse(w).tag for w in found if w[:1].isupper()]
    if any({"Name", "Surn", "Patr"} & tag.grammemes for tag in capitalised):
        return "person"
    if any("Geox" in tag for tag in capitalised):
        return "place"
    return "other"


def answer_bucket(task: Task, example: Example) -> str | None:
    answer = gold_answer_text(task, example)
    return answer_category(answer) if answer else None


def exam_bucket(task: Task, example: Example) -> str | None:
    exam = example.fields.get("exam_name")
    return str(exam) if exam not in (None, "") else None


def grade_bucket(task: Task, example: Example) -> str | None:
    grade = example.fields.get("school_grade")
    return f"grade {grade}" if grade not in (None, "") else None


RUSSIAN_VOWELS = frozenset("аеёиоуыэюя")


@lru_cache(maxsize=TEXT_CACHE)
def flesch_reading_ease(text: str) -> float | None:
    """Flesch reading ease with Oborneva's coefficients for Russian (Oborneva, I. V. 2006. Автоматизированная
    оценка сложности учебных текстов на основе статистических параметров. PhD thesis, Moscow):
    206.835 - 1.3 * words per sentence - 60.1 * syllables per word, one syllable per vowel."""
    found = words(text)
    if not found:
        return None
    syllables = sum(ch in RUSSIAN_VOWELS for word in found for ch in word.lower())
    sentence_count = max(1, len(sentences(text)))
    return 206.835 - 1.3 * len(found) / sentence_count - 60.1 * syllables / len(found)


# Flesch's own reading-ease bands, merged into four.
READABILITY_EDGES = (30, 50, 70)
READABILITY_LABELS = ("<30 very difficult", "30-50 difficult", "50-70 standard", "70+ easy")


def readability_bucket(task: Task, example: Example) -> str | None:
    score = flesch_reading_ease(text_of(task, example))
    return None if score is None else _range_of(score, READABILITY_EDGES, READABILITY_LABELS)


@lru_cache(maxsize=TEXT_CACHE)
def type_token_ratio(text: str) -> float | None:
    """Distinct lemmas over lemmas: lexical diversity that ignores inflection."""
    found = lemmas(text)
    return len(set(found)) / len(found) if found else None


DIVERSITY_EDGES = (0.6, 0.75, 0.9)
DIVERSITY_LABELS = ("<0.60", "0.60-0.75", "0.75-0.90", "0.90+")


def diversity_bucket(task: Task, example: Example) -> str | None:
    ratio = type_token_ratio(text_of(task, example))
    return None if ratio is None else _range_of(ratio, DIVERSITY_EDGES, DIVERSITY_LABELS)


def candidate_of(task: Task, example: Example) -> str | None:
    """The candidate the example asks about: Winograd's answer, RWSD's span1."""
    if task.name == "rwsd":
        target = example.fields.get("target")
        return target.get("span1_text") if isinstance(target, dict) else None
    return example.fields.get("answer")


def _head_tag(phrase: str) -> Any:
    """The pymorphy3 tag of the phrase's first noun or pronoun (of its last word if none)."""
    tags = [parse(word).tag for word in words(phrase)]
    return next((tag for tag in tags if tag.POS in ("NOUN", "NPRO")), tags[-1] if tags else None)


GENDERS = {"masc": "masculine", "femn": "feminine", "neut": "neuter"}
NUMBERS = {"sing": "singular", "plur": "plural"}


def gender_bucket(task: Task, example: Example) -> str | None:
    candidate = candidate_of(task, example)
    tag = _head_tag(candidate) if isinstance(candidate, str) else None
    if tag is None:
        return None
    return GENDERS.get(tag.gender) or ("common" if "ms-f" in tag else None)  # ms-f: сирота, коллега


def number_bucket(task: Task, example: Example) -> str | None:
    candidate = candidate_of(task, example)
    tag = _head_tag(candidate) if isinstance(candidate, str) else None
    return None if tag is None else NUMBERS.get(tag.number)


def candidates_bucket(task: Task, example: Example) -> str | None:
    """Winograd: its options; RuCoS: the distinct entities of its passage. Up to five counts are
    buckets of their own, larger ones are grouped."""
    options = example.fields.get("options") if task.name == "winograd" else example.candidates
    count = len(set(options)) if isinstance(options, list | tuple) else 0
    if not count:
        return None
    if count <= 5:
        return str(count)
    return "6-8" if count <= 8 else "9-16" if count <= 16 else "17+"


SLICES: dict[str, Slice] = {
    s.name: s
    for s in (
        Slice("length", "text length in words", ALL_TASKS, length_bucket),
        Slice("domain", "the record's source field", ("sit_ethics", "per_ethics", "rucos"), source_bucket),
        Slice("class", "gold class", CLASS_TASKS, class_bucket),
        Slice("answer", "gold answer category: number, person, place, other", QA_TASKS, answer_bucket),
        Slice("exam", "exam the question comes from", ("ru_worldtree",), exam_bucket),
        Slice("grade", "school grade of the question", ("ru_worldtree",), grade_bucket),
        Slice("readability", "Flesch reading ease, Russian", ALL_TASKS, readability_bucket, READABILITY_LABELS),
        Slice("diversity", "type-token ratio of lemmas", ALL_TASKS, diversity_bucket, DIVERSITY_LABELS),
        Slice("gender", "grammatical gender of the candidate", ("winograd", "rwsd"), gender_bucket),
        Slice("number", "grammatical number of the candidate", ("winograd", "rwsd"), number_bucket),
        Slice("candidates", "number of answer candidates", ("winograd", "rucos"), candidates_bucket),
    )
}


def resolve_slices(spec: str) -> tuple[str, ...]:
    """'all' or a comma-separated list of slice names -> the names."""
    if spec.strip().lower() == "all":
        return tuple(SLICES)
    return check_slice_names([n.strip() for n in spec.split(",") if n.strip()] or [spec])


def check_slice_names(names: Sequence[str]) -> tuple[str, ...]:
    """The names, unchanged, if every one is a slice; else a RuevalError listing the slices."""
    unknown = [n for n in names if n not in SLICES]
    if unknown:
        raise RuevalError(f"unknown slice '{', '.join(unknown)}'; expected all or any of: {', '.join(SLICES)}")
    return tuple(names)


def slice_scores(
    task: Task, examples: Sequence[Example], preds: Sequence[Any], names: Sequence[str]
) -> dict[str, dict[str, dict[str, float]]]:
    """Every metric of the task per bucket of each named slice that applies to the task:
    {slice: {bucket: {"n": examples, metric: value x100, ...}}}. Buckets smaller than
    MIN_BUCKET_SIZE (in questions for grouped tasks) keep only "n"; empty slices are left out."""
    result: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        chosen = SLICES[name]
        if task.name not in chosen.tasks:
            continue
        members: dict[str, list[int]] = defaultdict(list)
        for i, example in enumerate(progress(examples, f"slice {name} of {task.name}", total=len(examples))):
            label = chosen.bucket(task, example)
            if label is not None:
                members[label].append(i)
        if members:
            result[name] = {
                label: _bucket_scores(task, [examples[i] for i in rows], [preds[i] for i in rows])
                for label, rows in sorted(members.items(), key=lambda item: chosen.sort_key(item[0]))
            }
    return result


def _bucket_scores(task: Task, examples: list[Example], preds: list[Any]) -> dict[str, float]:
    units = len({e.group for e in examples}) if examples[0].group is not None else len(examples)
    if units < MIN_BUCKET_SIZE:
        return {"n": len(examples)}
    return {"n": len(examples), **score_task(task, examples, preds).metrics}
