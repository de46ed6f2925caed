"""Task shapes: what a task's examples are made of, declared once per task as plain data.

A shape names the fields that play each part (a premise and a hypothesis, a passage and a question,
a word and its two sentences ...) and the label space. The record layout follows from it: the fields
a record must have (``inputs``), its texts in reading order (``texts``), the main text among them
(``main``, what slices measure), the gold answer and how a record becomes examples (``parse``). Every
consumer derives its own reading from the shape: prompts, robustness targets, TF-IDF fields, fine-tuning
heads. Only what a paper decided per task stays in those consumers' tables.

| shape | tasks | one example is |
|---|---|---|
| ``Texts`` | TERRa, RCB, LiDiRus | a few texts (a premise and a hypothesis) given one label |
| ``PassageQuestion`` | DaNetQA | a question about a passage, answered by a label (yes/no) |
| ``AnswerCheck`` | MuSeRC | one answer to a question on a passage, right or wrong |
| ``WordInContext`` | RUSSE | a word in two sentences: the same sense or not |
| ``SpanCoreference`` | RWSD | a text with two spans: does the pronoun span refer to the other? |
| ``Coreference`` | Winograd | a text, a pronoun and a candidate referent: does it refer to it? |
| ``Choice`` | PARus | a context and a few option fields: which option is right |
| ``InlineChoice`` | RuOpenBookQA, RuWorldTree | a question with its options (A), (B), ... inline |
| ``Cloze`` | RuCoS | a query whose placeholder one of the passage's entities fills |
| ``Answer`` | MultiQ, CheGeKa | a question whose answer text is generated |
| ``MultiLabel`` | Ethics-1, Ethics-2 | a text with a 0/1 target per category |
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rueval.core.errors import RuevalError
from rueval.data.records import Example, Record
from rueval.tasks.inline_options import LETTERS, split_options


class Shape:
    """The parts every shape has; each shape is a frozen dataclass of field names over this."""

    labels: tuple[Any, ...] = ()  # classification label space, as written in the data
    categories: tuple[str, ...] = ()  # multilabel target fields
    label_field = "label"  # where a record's gold answer is
    nested = False  # several examples per record (MuSeRC answers, RuCoS queries)
    label_index = False  # a task file's labels, as lm-eval reads them: an integer a position, a text exact

    @property
    def inputs(self) -> tuple[str, ...]:
        """The fields every record must have (dotted paths for nested ones)."""
        raise NotImplementedError

    @property
    def texts(self) -> tuple[str, ...]:
        """An example's input texts in reading order (text, or lists of texts such as Winograd's options)."""
        return self.inputs

    @property
    def main(self) -> tuple[str, ...]:
        """The main text among ``texts``, which slices measure (a question's answers share its passage)."""
        return self.texts

    def parse(self, record: Record) -> list[Example]:
        """The examples of one record; a DataError naming the record's file, line and field if it is bad."""
        self.check(record)
        return [Example(idx=record.id(), fields=record.data, label=self.gold(record))]

    def labels_of(self, fields: Mapping[str, Any]) -> tuple[Any, ...]:
        """The labels one example can take: the label space, or a multiple-choice item's own letters."""
        return self.labels

    def check(self, record: Record) -> None:
        """Every input field is there and every text field holds text."""
        for path in self.inputs:
            record.get(path)
        for path in self.texts:
            value = record.get(path, (str, list))
            if isinstance(value, list) and not all(isinstance(item, str) for item in value):
                raise record.error(path, f"expected a list of texts, got {value!r:.60}")

    def gold(self, record: Record) -> Any:
        """The record's gold class label matched against the label space, or None if absent."""
        if self.label_field not in record.data:
            return None
        value = record.data[self.label_field]
        if self.label_index and type(value) is int and 0 <= value < len(self.labels):
            return self.labels[value]  # a task file's integer label is a position (lm-eval's rule)
        for label in self.labels:
            if _same(value, label, exact=self.label_index):
                return label
        expected = ", ".join(map(_label_text, self.labels))
        raise record.error(self.label_field, f"unknown label {value!r}; expected one of: {expected}")


def _same(value: Any, label: Any, exact: bool) -> bool:
    """Whether a gold value names a label: in JSON text, or (``exact``, a task file's) as its exact NFC text."""
    if exact:
        return isinstance(value, str) and unicodedata.normalize("NFC", value) == unicodedata.normalize("NFC", label)
    return _label_text(value) == _label_text(label)


def _label_text(value: Any) -> str:
    """How a label reads in JSON text: true and "true" match, 1 and true do not."""
    return str(value).lower() if isinstance(value, bool | str) else str(value)


@dataclass(frozen=True)
class Texts(Shape):
    """A few texts given one label: a premise and a hypothesis (entailment), or a single text."""

    fields: tuple[str, ...]
    labels: tuple[Any, ...]
    label_index: bool = False
    label_field: str = "label"

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.fields


@dataclass(frozen=True)
class PassageQuestion(Shape):
    """A question about a passage, answered by a label (yes or no)."""

    passage: str
    question: str
    labels: tuple[Any, ...]

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.question, self.passage)

    @property
    def main(self) -> tuple[str, ...]:
        return (self.passage,)


@dataclass(frozen=True)
class WordInContext(Shape):
    """A word in two sentences, each with its character offsets where given: used in the same sense?"""

    word: str
    sentences: tuple[str, str]
    offsets: tuple[tuple[str, str], tuple[str, str]]  # each sentence's (start, end) fields
    labels: tuple[Any, ...]

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.word, *self.sentences)

    @property
    def main(self) -> tuple[str, ...]:
        return self.sentences


@dataclass(frozen=True)
class SpanCoreference(Shape):
    """SuperGLUE's WSC layout: a text and ``target`` {span1_text, span1_index, span2_text, span2_index},
    span 1 a candidate referent, span 2 the pronoun (its word index counts whitespace-separated words)."""

    text: str
    target: str
    labels: tuple[Any, ...]

    def span(self, n: int, part: str = "text") -> str:
        """The field of span n's text or word index, e.g. "target.span1_text"."""
        return f"{self.target}.span{n}_{part}"

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.text, self.span(1), self.span(2))

    @property
    def main(self) -> tuple[str, ...]:
        return (self.text,)


@dataclass(frozen=True)
class Coreference(Shape):
    """A text, the pronoun in it, one candidate referent, and the list of every candidate: does the
    pronoun refer to this one?"""

    text: str
    pronoun: str
    candidate: str
    options: str
    labels: tuple[Any, ...]

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.text, self.options, self.pronoun, self.candidate)

    @property
    def main(self) -> tuple[str, ...]:
        return (self.text,)


@dataclass(frozen=True)
class Choice(Shape):
    """A context and a few option fields, the label the right option's position; ``question`` names a
    field saying what is asked of the options (PARus: cause or effect), when there is one."""

    context: tuple[str, ...]
    options: tuple[str, ...]
    question: str | None = None
    asks: tuple[str, ...] = ()  # what the question field may say, when prompts and rules know only these
    label_field: str = "label"

    @property
    def labels(self) -> tuple[int, ...]:  # type: ignore[override]  # Shape's default; every shape is frozen
        return tuple(range(len(self.options)))

    @property
    def inputs(self) -> tuple[str, ...]:
        return (*self.context, *self.options, *([self.question] if self.question else []))

    @property
    def main(self) -> tuple[str, ...]:
        return self.context

    def check(self, record: Record) -> None:
        super().check(record)
        if self.question and self.asks and record.get(self.question) not in self.asks:
            expected = " or ".join(self.asks)
            raise record.error(self.question, f"expected {expected}, got {record.get(self.question)!r:.60}")


@dataclass(frozen=True)
class InlineChoice(Shape):
    """A question holding its options: "stem (A) x (B) y (C) z (D) w"; the gold is the letter. An
    item has as many options as it writes (tasks.options): its labels are its own letters."""

    question: str
    answer: str = "answer"
    labels: tuple[str, ...] = LETTERS

    @property
    def label_field(self) -> str:  # type: ignore[override]  # Shape's default; every shape is frozen
        return self.answer

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.question,)

    def labels_of(self, fields: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(split_options(str(fields.get(self.question, "")), self.question)[1])

    def check(self, record: Record) -> None:
        super().check(record)
        try:
            split_options(record.get(self.question, str), self.question)
        except RuevalError as e:
            raise record.error(self.question, str(e).removeprefix(f"{self.question}: ")) from None

    def gold(self, record: Record) -> str | None:
        label: str | None = super().gold(record)
        own = self.labels_of(record.data)
        if label is not None and label not in own:
            shown = " ".join(f"({letter})" for letter in own)
            raise record.error(self.answer, f"answer {label!r} is none of the question's options {shown}")
        return label


@dataclass(frozen=True)
class MultiLabel(Shape):
    """A text with a 0/1 target per category, each category a field of the record."""

    text: str
    categories: tuple[str, ...]

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.text,)

    def gold(self, record: Record) -> tuple[int, ...] | None:
        if not any(c in record.data for c in self.categories):
            return None
        return tuple(_binary(record, c) for c in self.categories)


def _binary(record: Record, category: str) -> int:
    value = record.get(category, (int, bool))
    if value not in (0, 1):
        raise record.error(category, f"expected 0 or 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Answer(Shape):
    """A question, with the passages it is asked on, whose answer is generated. The gold ``answer``
    field holds the answer text (``alternatives`` separating several right ones), a list of right
    answers, or, when the answers are spans of the passage ``span_of``, objects with their "segment"."""

    question: str
    passages: tuple[str, ...] = ()
    answer: str = "answer"
    span_of: str | None = None
    alternatives: str | None = None

    @property
    def label_field(self) -> str:  # type: ignore[override]  # Shape's default; every shape is frozen
        return self.answer

    @property
    def inputs(self) -> tuple[str, ...]:
        return (*self.passages, self.question)

    @property
    def main(self) -> tuple[str, ...]:
        return self.passages or (self.question,)

    def gold(self, record: Record) -> tuple[str, ...] | None:
        if self.answer not in record.data:
            return None
        if self.span_of:  # every mention of a gold span counts as correct
            answers = tuple(dict.fromkeys(a.get("segment", str) for a in record.items(self.answer)))
        else:
            value = record.get(self.answer, str if self.alternatives else (str, list))
            if isinstance(value, str) and self.alternatives:
                # as MERA's CheGeKa scorer splits them, an empty alternative too ("Пингвин;"): it is
                # a right answer there (an empty prediction matches it), kept last so that the first
                # answer, a demonstration's target, is a real one
                split = dict.fromkeys(a.strip() for a in value.split(self.alternatives))
                return tuple(sorted(split, key=lambda a: not a))
            if isinstance(value, str):
                return (value,)
            if not all(isinstance(item, str) for item in value):
                raise record.error(self.answer, f"expected a list of answer texts, got {value!r:.60}")
            answers = tuple(dict.fromkeys(value))
        if not answers:
            raise record.error(self.answer, "is empty; a labelled question needs at least one answer")
        return answers


def _without(data: Any, *keys: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


@dataclass(frozen=True)
class AnswerCheck(Shape):
    """MultiRC's layout (MuSeRC): a passage {text, questions: [{question, answers: [{text, label}]}]};
    one example per answer, labelled right or wrong, the answers of a question forming a group (for EM)."""

    labels: tuple[Any, ...] = (0, 1)
    nested = True

    @property
    def inputs(self) -> tuple[str, ...]:
        return ("passage.text", "passage.questions")

    @property
    def texts(self) -> tuple[str, ...]:
        return ("passage", "question", "answer")

    @property
    def main(self) -> tuple[str, ...]:
        return ("passage",)

    def parse(self, record: Record) -> list[Example]:
        passage_idx = record.id()
        text = record.get("passage.text", str)
        examples = []
        for question in record.items("passage.questions"):
            question_idx = question.id()
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
                idx = (passage_idx, question_idx, answer.id())
                examples.append(Example(idx=idx, fields=fields, label=self.gold(answer), group=idx[:2]))
        return examples


@dataclass(frozen=True)
class Cloze(Shape):
    """ReCoRD's layout (RuCoS): a passage {text, entities: [{start, end}]} and queries [{query with
    @placeholder, answers: [{text}]}]; one example per query, the passage's entity mentions its candidates."""

    nested = True

    @property
    def inputs(self) -> tuple[str, ...]:
        return ("passage.text", "passage.entities", "qas")

    @property
    def texts(self) -> tuple[str, ...]:
        return ("passage", "query")

    @property
    def main(self) -> tuple[str, ...]:
        return ("passage",)

    def parse(self, record: Record) -> list[Example]:
        passage_idx = record.id()
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
            fields = {**_without(record.data, "passage", "qas"), **_without(query.data, "answers", "idx")}
            fields["passage"] = text
            idx = (passage_idx, query.id())
            examples.append(Example(idx=idx, fields=fields, label=label, candidates=tuple(candidates)))
        return examples
