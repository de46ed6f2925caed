"""How each task becomes encoder inputs and labels, following jiant's RussianSuperGLUE heads.

A head turns one example into text pairs (a text and an optional second text, joined by the
tokenizer's separator) and the example's label into a training target:

- ``pair``: one pair, one class of the task's label space (TERRa, LiDiRus, RCB, DaNetQA, RUSSE,
  RWSD, MuSeRC per answer, TAPE Winograd); a sequence classification model.
- ``multilabel``: one text, one 0/1 target per category (TAPE Ethics).
- ``choice``: one pair per option, a softmax over the options (PARus, RuOpenBookQA,
  RuWorldTree); a multiple-choice model.
- ``candidate``: one pair per distinct passage entity put in the query's placeholder, each
  classified true/false; the entity scored most likely true is the answer (RuCoS, as jiant's
  ReCoRD).

Both the head and the pairs follow from the task's shape (``head_for``, ``text_pairs``): a task of
a shape above fine-tunes with no entry of its own here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rueval.core.errors import RuevalError
from rueval.tasks import Example, Task, split_options
from rueval.tasks.offsets import word_span
from rueval.tasks.shapes import (
    Answer,
    AnswerCheck,
    Choice,
    Cloze,
    Coreference,
    InlineChoice,
    MultiLabel,
    PassageQuestion,
    SpanCoreference,
    Texts,
    WordInContext,
)

Pair = tuple[str, str | None]

# The question jiant's COPA head appends to the premise (PARus: cause or effect), in Russian.
QUESTION_WORDS = {"cause": "Что было причиной?", "effect": "Что случилось в результате?"}
TARGET_MARK = "*"  # around the word in question (RUSSE) and the candidate referent (RWSD)
PRONOUN_MARKS = ("[", "]")  # around the pronoun (RWSD)


@dataclass(frozen=True)
class Head:
    kind: str  # "pair", "multilabel", "choice" or "candidate"
    task: Task

    def pairs(self, example: Example) -> list[Pair]:
        return text_pairs(self.task, example)

    def num_labels(self, task: Task) -> int:
        if self.kind == "multilabel":
            return len(task.categories)
        return len(task.labels) if self.kind == "pair" else 1 if self.kind == "choice" else 2

    def options(self, task: Task, example: Example) -> Sequence[Any]:
        """What a choice or candidate head picks from, in the order of ``pairs``."""
        if self.kind == "choice":
            return task.labels_of(example)
        return tuple(dict.fromkeys(example.candidates))

    def targets(self, task: Task, example: Example) -> list[Any]:
        """The training target of each pair (``pair``, ``multilabel``) or of the example (``choice``);
        for ``candidate`` one 0/1 target per candidate."""
        if self.kind == "pair":
            return [task.labels.index(example.label)]
        if self.kind == "multilabel":
            return [[float(v) for v in example.label]]
        if self.kind == "choice":
            return [self.options(task, example).index(example.label)]
        return [int(option in example.label) for option in self.options(task, example)]

    def decode(self, task: Task, example: Example, scores: Sequence[Any]) -> Any:
        """A prediction in the form of ``Example.label`` from the model's output for the example's
        pairs: logits of its one pair, option logits, or each candidate's (false, true) logits."""
        if self.kind == "pair":
            return task.labels[_argmax(scores[0])]
        if self.kind == "multilabel":
            return tuple(int(logit > 0) for logit in scores[0])
        if self.kind == "choice":  # scores beyond the example's own options are padding
            options = self.options(task, example)
            return options[_argmax(scores[: len(options)])]
        options = self.options(task, example)
        if not options:  # a query whose passage names no entity: nothing can be answered
            return ""
        return options[_argmax([logits[1] - logits[0] for logits in scores])]


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: values[i])


def _mark(text: str, start: int, end: int, marks: tuple[str, str]) -> str:
    return f"{text[:start]}{marks[0]}{text[start:end]}{marks[1]}{text[end:]}"


def _marked_sentence(shape: WordInContext, e: Example, n: int) -> str:
    """Sentence n with the word marked where its character offsets point (either convention,
    tasks.offsets), else where it first occurs."""
    sentence, word = e.text(shape.sentences[n]), e.text(shape.word)
    span = word_span(sentence, *(e.value(f) for f in shape.offsets[n]))
    if span is None:
        start = sentence.lower().find(word.lower())
        if start < 0:
            return sentence
        span = (start, start + len(word))
    return _mark(sentence, *span, (TARGET_MARK, TARGET_MARK))


def _span_offsets(shape: SpanCoreference, e: Example, text: str, n: int) -> tuple[int, int]:
    """Character offsets of target span n: at its word index when the words agree, else its first occurrence."""
    span = e.text(shape.span(n))
    index = e.value(shape.span(n, "index"))
    words = text.split(" ")
    if isinstance(index, int) and " ".join(words[index:]).startswith(span):
        start = len(" ".join(words[:index])) + (1 if index else 0)
        return start, start + len(span)
    start = text.find(span)
    if start < 0:
        raise RuevalError(f"rwsd example {e.key}: span{n} {span!r} is not in the text")
    return start, start + len(span)


def _marked_spans(shape: SpanCoreference, e: Example) -> str:
    """The text with the referent candidate (span1) and the pronoun (span2) marked."""
    text = e.text(shape.text)
    (s1, e1), (s2, e2) = _span_offsets(shape, e, text, 1), _span_offsets(shape, e, text, 2)
    if s1 < e2 and s2 < e1:
        raise RuevalError(f"rwsd example {e.key}: span1 and span2 overlap")
    # Mark the later span first so the earlier one's offsets stay valid.
    for start, end, marks in sorted([(s1, e1, (TARGET_MARK, TARGET_MARK)), (s2, e2, PRONOUN_MARKS)], reverse=True):
        text = _mark(text, start, end, marks)
    return text


def _choice_pairs(shape: Choice, e: Example) -> list[Pair]:
    """The context, with the question's word (PARus: cause or effect) after it, against each option."""
    context = " ".join(map(e.text, shape.context))
    if shape.question:
        question = e.text(shape.question)
        context = f"{context} {QUESTION_WORDS.get(question, question)}"
    return [(context, e.text(option)) for option in shape.options]


def text_pairs(task: Task, e: Example) -> list[Pair]:
    """The example's text pairs, by its task's shape."""
    match task.shape:
        case Texts(fields=fields):
            return [(e.text(fields[0]), " ".join(map(e.text, fields[1:])) or None)]
        case PassageQuestion(passage=passage, question=question):
            return [(e.text(passage), e.text(question))]
        case AnswerCheck():
            return [(e.text("passage"), f"{e.text('question')} {e.text('answer')}")]
        case WordInContext() as shape:
            return [(_marked_sentence(shape, e, 0), _marked_sentence(shape, e, 1))]
        case SpanCoreference() as shape:
            return [(_marked_spans(shape, e), None)]
        case Coreference(text=text, pronoun=pronoun, candidate=candidate):
            return [(e.text(text), f"{e.text(pronoun)} — {e.text(candidate)}")]
        case Choice() as shape:
            return _choice_pairs(shape, e)
        case InlineChoice(question=question):
            stem, options = split_options(e.text(question), where=f"{task.name} example {e.key}")
            return [(stem, text) for text in options.values()]
        case Cloze():
            passage, query = e.text("passage"), e.text("query")
            return [(passage, query.replace("@placeholder", entity)) for entity in dict.fromkeys(e.candidates)]
        case MultiLabel(text=text):
            return [(e.text(text), None)]
    raise RuevalError(f"{task.name}: no text pairs follow from a {type(task.shape).__name__} shape")


def head_for(task: Task) -> Head:
    """The head of the task's shape: one class of a pair, 0/1 per category, a softmax over options, or
    each candidate entity true/false."""
    match task.shape:
        case MultiLabel():
            return Head("multilabel", task)
        case Choice() | InlineChoice():
            return Head("choice", task)
        case Cloze():
            return Head("candidate", task)
        case Answer():
            raise RuevalError(
                f"{task.name} has no classification form (its answers are generated), so an encoder cannot be "
                "fine-tuned on it"
            )
    return Head("pair", task)
