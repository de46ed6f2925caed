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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rueval.errors import RuevalError
from rueval.tasks import Example, Task, split_options

Pair = tuple[str, str | None]

# The question word jiant's COPA head appends to the premise, in Russian.
PARUS_QUESTIONS = {"cause": "Что было причиной?", "effect": "Что случилось в результате?"}
TARGET_MARK = "*"  # around the word in question (RUSSE) and the candidate referent (RWSD)
PRONOUN_MARKS = ("[", "]")  # around the pronoun (RWSD)


@dataclass(frozen=True)
class Head:
    kind: str  # "pair", "multilabel", "choice" or "candidate"
    pairs: Callable[[Example], list[Pair]]

    def num_labels(self, task: Task) -> int:
        if self.kind == "multilabel":
            return len(task.categories)
        return len(task.labels) if self.kind == "pair" else 1 if self.kind == "choice" else 2

    def options(self, task: Task, example: Example) -> Sequence[Any]:
        """What a choice or candidate head picks from, in the order of ``pairs``."""
        if self.kind == "choice":
            return task.labels
        return tuple(dict.fromkeys(example.candidates))

    def targets(self, task: Task, example: Example) -> list[Any]:
        """The training target of each pair (``pair``, ``multilabel``) or of the example (``choice``);
        for ``candidate`` one 0/1 target per candidate."""
        if self.kind == "pair":
            return [task.labels.index(example.label)]
        if self.kind == "multilabel":
            return [[float(v) for v in example.label]]
        if self.kind == "choice":
            return [task.labels.index(example.label)]
        return [int(option in example.label) for option in self.options(task, example)]

    def decode(self, task: Task, example: Example, scores: Sequence[Any]) -> Any:
        """A prediction in the form of ``Example.label`` from the model's output for the example's
        pairs: logits of its one pair, option logits, or each candidate's (false, true) logits."""
        if self.kind == "pair":
            return task.labels[_argmax(scores[0])]
        if self.kind == "multilabel":
            return tuple(int(logit > 0) for logit in scores[0])
        if self.kind == "choice":
            return task.labels[_argmax(scores)]
        options = self.options(task, example)
        if not options:  # a query whose passage names no entity: nothing can be answered
            return ""
        return options[_argmax([logits[1] - logits[0] for logits in scores])]


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: values[i])


def _nli(first: str, second: str) -> Callable[[Example], list[Pair]]:
    return lambda e: [(e.text(first), e.text(second))]


def _muserc(e: Example) -> list[Pair]:
    return [(e.text("passage"), f"{e.text('question')} {e.text('answer')}")]


def _mark(text: str, start: int, end: int, marks: tuple[str, str]) -> str:
    return f"{text[:start]}{marks[0]}{text[start:end]}{marks[1]}{text[end:]}"


def _russe_sentence(e: Example, n: int) -> str:
    """The sentence with the target word marked at its character offsets, else where it first occurs."""
    sentence, word = e.text(f"sentence{n}"), e.text("word")
    start, end = e.value(f"start{n}"), e.value(f"end{n}")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(sentence)):
        start = sentence.lower().find(word.lower())
        if start < 0:
            return sentence
        end = start + len(word)
    return _mark(sentence, start, end, (TARGET_MARK, TARGET_MARK))


def _russe(e: Example) -> list[Pair]:
    return [(_russe_sentence(e, 1), _russe_sentence(e, 2))]


def _span_offsets(e: Example, text: str, n: int) -> tuple[int, int]:
    """Character offsets of target span n: at its word index when the words agree, else its first occurrence."""
    span = e.text(f"target.span{n}_text")
    index = e.value(f"target.span{n}_index")
    words = text.split(" ")
    if isinstance(index, int) and " ".join(words[index:]).startswith(span):
        start = len(" ".join(words[:index])) + (1 if index else 0)
        return start, start + len(span)
    start = text.find(span)
    if start < 0:
        raise RuevalError(f"rwsd example {e.key}: span{n} {span!r} is not in the text")
    return start, start + len(span)


def _rwsd(e: Example) -> list[Pair]:
    """The text with the referent candidate (span1) and the pronoun (span2) marked."""
    text = e.text("text")
    (s1, e1), (s2, e2) = _span_offsets(e, text, 1), _span_offsets(e, text, 2)
    if s1 < e2 and s2 < e1:
        raise RuevalError(f"rwsd example {e.key}: span1 and span2 overlap")
    # Mark the later span first so the earlier one's offsets stay valid.
    for start, end, marks in sorted([(s1, e1, (TARGET_MARK, TARGET_MARK)), (s2, e2, PRONOUN_MARKS)], reverse=True):
        text = _mark(text, start, end, marks)
    return [(text, None)]


def _winograd(e: Example) -> list[Pair]:
    return [(e.text("text"), f"{e.text('reference')} — {e.text('answer')}")]


def _parus(e: Example) -> list[Pair]:
    question = e.text("question")
    context = f"{e.text('premise')} {PARUS_QUESTIONS.get(question, question)}"
    return [(context, e.text("choice1")), (context, e.text("choice2"))]


def _lettered(task_name: str) -> Callable[[Example], list[Pair]]:
    def pairs(e: Example) -> list[Pair]:
        stem, options = split_options(e.text("question"), where=f"{task_name} example {e.key}")
        return [(stem, text) for text in options.values()]

    return pairs


def _rucos(e: Example) -> list[Pair]:
    passage, query = e.text("passage"), e.text("query")
    return [(passage, query.replace("@placeholder", entity)) for entity in dict.fromkeys(e.candidates)]


def _text(e: Example) -> list[Pair]:
    return [(e.text("text"), None)]


HEADS: dict[str, Head] = {
    "terra": Head("pair", _nli("premise", "hypothesis")),
    "lidirus": Head("pair", _nli("sentence1", "sentence2")),
    "rcb": Head("pair", _nli("premise", "hypothesis")),
    "danetqa": Head("pair", _nli("passage", "question")),
    "russe": Head("pair", _russe),
    "rwsd": Head("pair", _rwsd),
    "muserc": Head("pair", _muserc),
    "parus": Head("choice", _parus),
    "rucos": Head("candidate", _rucos),
    "winograd": Head("pair", _winograd),
    "ru_openbook": Head("choice", _lettered("ru_openbook")),
    "ru_worldtree": Head("choice", _lettered("ru_worldtree")),
    "sit_ethics": Head("multilabel", _text),
    "per_ethics": Head("multilabel", _text),
}


def head_for(task: Task) -> Head:
    if task.name not in HEADS:
        raise RuevalError(
            f"{task.name} has no classification form, so an encoder cannot be fine-tuned on it; "
            f"finetune models handle: {', '.join(HEADS)}"
        )
    return HEADS[task.name]
