"""What each task's perturbations may change: its input fields, the constraints that protect the
gold answer, and where AddSent puts a distractor. They follow from the task's shape; ``TAPE_CONSTRAINTS``
and ``NOT_APPLIED`` hold what TAPE decided per task beyond that."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

from rueval.core.errors import DataError, RuevalError
from rueval.robustness.constraints import (
    Constraint,
    Jeopardy,
    Mentions,
    Multihop,
    NamedEntities,
    Problem,
    Protected,
    Referents,
    TargetWord,
)
from rueval.robustness.spans import Span, tighten
from rueval.tasks import TASKS, Example, PerTask, Task
from rueval.tasks.inline_options import option_spans
from rueval.tasks.mera_generative import Graded
from rueval.tasks.shapes import (
    Answer,
    AnswerCheck,
    Choice,
    Cloze,
    Coreference,
    InlineChoice,
    MultiLabel,
    PassageQuestion,
    Shape,
    SpanCoreference,
    Texts,
    WordInContext,
)

# TAPE's task-specific constraints (Appendix D, Table 4), kept ahead of those the shape implies
TAPE_CONSTRAINTS: dict[str, tuple[Constraint, ...]] = {"multiq": (Multihop(),), "chegeka": (Jeopardy(),)}
# TAPE Table 2: no back-translation for Winograd (a paraphrase need not keep the referents)
NOT_APPLIED = {"winograd": ("back_translation",)}


@dataclass(frozen=True)
class Target:
    """The perturbable part of a task's examples."""

    fields: tuple[str, ...]  # text fields perturbations rewrite; the gold and everything else stay
    constraints: tuple[Constraint, ...] = ()
    distractor: str | None = None  # the field AddSent extends with a generated sentence
    not_applied: tuple[str, ...] = ()  # perturbations the benchmark does not apply to the task


def _shape_target(shape: Shape) -> Target:
    """What follows from the shape: the texts a reader reads (not a word or a span asked about), the
    annotations the answer depends on (named entities for questions on passages), AddSent's field (the
    passage, the first text)."""
    match shape:
        case Texts(fields=fields):
            return Target(fields, distractor=fields[0])
        case PassageQuestion(passage=passage, question=question):
            return Target((question, passage), (NamedEntities(),), passage)
        case AnswerCheck():
            return Target(shape.texts, (NamedEntities(),), "passage")
        case WordInContext(sentences=sentences):
            return Target(sentences, (TargetWord(),), sentences[-1])
        case SpanCoreference(text=text) | Coreference(text=text):
            return Target((text,), (Referents(),), text)
        case Choice(context=context, options=options):
            return Target((*context, *options), distractor=context[0])
        case InlineChoice(question=question):
            return Target((question,), (NamedEntities(),))  # AddSent replaces a wrong option instead
        case Cloze():
            return Target(("passage",), (Mentions(),), "passage")
        case Answer(question=question, passages=passages, span_of=span_of):
            keep = (NamedEntities(),) if passages else ()
            return Target((question, *passages), keep, span_of or (passages or (question,))[-1])
        case MultiLabel(text=text):
            return Target((text,), distractor=text)
        case Graded(fields=fields):  # MERA's USE and code tasks: their texts, no distractor
            return Target(fields)
    raise RuevalError(f"no perturbable fields follow from a {type(shape).__name__} shape")


def _target(task: Task) -> Target:
    derived = _shape_target(task.shape)
    constraints = (*TAPE_CONSTRAINTS.get(task.name, ()), *derived.constraints)
    return Target(derived.fields, constraints, derived.distractor, NOT_APPLIED.get(task.name, ()))


TARGETS: PerTask[Target] = PerTask(_target)


@dataclass(frozen=True)
class Piece:
    """A stretch of one input field that a perturbation rewrites as a unit.

    ``role`` is "text" for plain fields; a multiple-choice question splits into its "stem" and
    options, "option" for a wrong one and "answer" for the gold one (AddSent replaces a wrong one).
    """

    field: str
    start: int
    end: int
    text: str
    protected: tuple[Span, ...] = ()  # offsets relative to the piece (may reach beyond it)
    role: str = "text"
    distractor: bool = False  # AddSent appends its sentence to this piece


def target_for(task: Task) -> Target:
    return TARGETS[task.name] if task.name in TASKS else _target(task)  # a task made in code, unregistered


def applies(task: Task, perturbation: str) -> bool:
    return perturbation not in target_for(task).not_applied


def not_applied_notes(perturbations: Sequence[str]) -> list[str]:
    """A note for each of ``perturbations`` that some tasks do not get."""
    notes = []
    for name in perturbations:
        tasks = [task for task, target in TARGETS.items() if name in target.not_applied]
        if tasks:
            notes.append(f"{name} is not applied to {', '.join(tasks)}, as in TAPE (Table 2)")
    return notes


def check_examples(task: Task, examples: Sequence[Example], file: str) -> None:
    """A DataError naming ``file``, the example and the field, for the first example whose text to
    perturb is not text or whose annotations a constraint reads are malformed."""
    target = target_for(task)
    for example in examples:
        # lazily, in this order: a constraint's check may rely on the fields being text
        checks = chain((_not_text(example, f) for f in target.fields), (c.check(example) for c in target.constraints))
        problem = next(filter(None, checks), None)
        if problem:
            field, message = problem
            raise DataError(file, f"{task.name} example with idx {example.key}: {message}", field=field)


def _not_text(example: Example, field: str) -> Problem | None:
    value = example.fields.get(field)
    if isinstance(value, str):
        return None
    return field, f"expected text to perturb, got {type(value).__name__} {value!r:.60}"


def protected_spans_batch(task: Task, examples: Sequence[Example], file: str | None = None) -> list[Protected]:
    """``protected_spans`` of many examples, checked first (``file`` names them in errors), the
    constraints' analyses batched."""
    check_examples(task, examples, file or f"{task.name} examples")
    target = target_for(task)
    for constraint in target.constraints:
        constraint.prepare(examples, target.fields)
    return [protected_spans(task, example) for example in examples]


def protected_spans(task: Task, example: Example) -> Protected:
    """The union of the spans every constraint of the task protects, per field."""
    target = target_for(task)
    protected: Protected = {f: [] for f in target.fields}
    for constraint in target.constraints:
        for f, spans in constraint.protect(example, target.fields).items():
            protected.setdefault(f, []).extend(spans)
    return {f: tighten(example.fields[f], spans) for f, spans in protected.items()}


def pieces(task: Task, example: Example, protected: Protected) -> list[Piece]:
    """The example's perturbable pieces, in field order, each with its protected spans."""
    target = target_for(task)
    result = []
    for f in target.fields:
        text = example.fields[f]
        ranges = (
            _option_ranges(text, example.label)
            if isinstance(task.shape, InlineChoice) and f == task.shape.question
            else [((0, len(text)), "text")]
        )
        for (start, end), role in ranges:
            # relative to the piece, unclipped: a span reaching beyond it still blocks what it covers
            local = tuple((s - start, e - start) for s, e in protected.get(f, []) if s < end and start < e)
            result.append(Piece(f, start, end, text[start:end], local, role, f == target.distractor))
    return result


def _option_ranges(text: str, gold: object) -> list[tuple[Span, str]]:
    """The stem and each inline option of a multiple-choice question, markers excluded."""
    try:
        (stem_start, stem_end), spans = option_spans(text)
    except RuevalError:
        return [((0, len(text)), "text")]
    bounds = [(stem_start, stem_end, "stem")]
    bounds += [(start, end, "answer" if letter == gold else "option") for letter, (start, end) in spans.items()]
    ranges = []
    for start, end, role in bounds:
        tight = tighten(text, [(start, end)])
        if tight:
            ranges.append((tight[0], role))
    return ranges
