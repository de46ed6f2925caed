"""What every perturbation shares: a name, a rate p and a seed, the pieces of an example it
rewrites (robustness.targets) and how their edits are put back together, protected spans kept."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import ClassVar

from rueval.core.errors import RuevalError
from rueval.robustness.constraints import Protected
from rueval.robustness.spans import Edit, Span, apply_edits, is_word, overlaps, token_spans
from rueval.robustness.targets import Piece, pieces, protected_spans_batch, target_for
from rueval.tasks import Example, Task

Texts = Callable[[list[str]], list[str]]  # a batch of texts in, one text out for each


class Perturbation:
    """A text transformation with a rate and a seed. Subclasses implement ``rewrite`` (one piece of
    text at a time) or, for models that batch, ``rewrite_examples``."""

    name: ClassVar[str]
    default_rate: ClassVar[float]
    needs_model: ClassVar[str | None] = None  # the CLI option that supplies the model, if any
    rate_lowered: ClassVar[bool] = True  # the semantic filter retries at lower rates (TAPE: not for models)

    def __init__(self, rate: float | None = None, seed: int = 0):
        rate = self.default_rate if rate is None else rate
        if not 0 <= rate <= 1:
            raise RuevalError(f"{self.name}: rate {rate} is not between 0 and 1")
        self.rate, self.seed = rate, seed

    def __repr__(self) -> str:
        return f"{self.name}(p={self.rate:g})"

    def with_rate(self, rate: float) -> Perturbation:
        """The same perturbation at another rate (the semantic filter lowers it step by step)."""
        clone = copy.copy(self)
        clone.rate = rate
        return clone

    def rng(self, task: Task, example: Example, candidate: int = 0) -> random.Random:
        """A generator seeded by the example itself, so its perturbation does not depend on the
        batch it comes in. MuSeRC answers of one question (RuCoS queries of one passage) share it,
        so they see the same perturbed passage. The semantic filter draws several candidates of
        one example, each with its own generator."""
        anchor = example.idx[:-1] if isinstance(example.idx, tuple) else example.idx
        return random.Random(f"{self.seed}/{self.name}/{task.name}/{anchor}" + (f"/{candidate}" if candidate else ""))

    def perturb(
        self, example: Example, task: Task, rng: random.Random | None = None, protected: Protected | None = None
    ) -> Example | None:
        """A perturbed copy of ``example`` (gold untouched), or None if nothing could change."""
        rngs, spans = [rng or self.rng(task, example)], None if protected is None else [protected]
        return self.perturb_batch(task, [example], rngs, spans)[0]

    def perturb_batch(
        self,
        task: Task,
        examples: Sequence[Example],
        rngs: Sequence[random.Random] | None = None,
        protected: Sequence[Protected] | None = None,
    ) -> list[Example | None]:
        """``perturb`` over many examples; model-based perturbations batch their model calls."""
        rngs = rngs or [self.rng(task, e) for e in examples]
        protected = protected or protected_spans_batch(task, examples)
        split = [pieces(task, e, p) for e, p in zip(examples, protected, strict=True)]
        edits = self.rewrite_examples(split, rngs)
        return [_assemble(task, *args) for args in zip(examples, split, edits, protected, strict=True)]

    def perturb_text(self, text: str, rng: random.Random) -> str | None:
        """A free text perturbed as one piece with nothing protected (a text with no task fields behind it: a
        task file's document), or None if nothing could change."""
        edits = self.rewrite_examples([[Piece("text", 0, len(text), text)]], [rng])[0][0]
        perturbed, _ = apply_edits(text, edits, [])
        return None if perturbed == text else perturbed

    def rewrite_examples(self, examples: list[list[Piece]], rngs: Sequence[random.Random]) -> list[list[list[Edit]]]:
        """Edits (relative to each piece) for every piece of every example."""
        return [[self.rewrite(piece, rng) for piece in example] for example, rng in zip(examples, rngs, strict=True)]

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        raise NotImplementedError


def _assemble(
    task: Task, example: Example, split: list[Piece], edits: list[list[Edit]], protected: Protected
) -> Example | None:
    """Apply the pieces' edits to their fields, follow the protected spans, let constraints repair."""
    by_field: dict[str, list[Edit]] = {}
    for piece, piece_edits in zip(split, edits, strict=True):
        for edit in piece_edits:
            shifted = Edit(edit.start + piece.start, edit.end + piece.start, edit.text)
            by_field.setdefault(piece.field, []).append(shifted)
    fields = dict(example.fields)
    moved: dict[str, dict[Span, Span]] = {}
    for f, field_edits in by_field.items():
        fields[f], moved[f] = apply_edits(example.fields[f], field_edits, protected.get(f, []))
    if all(fields[f] == example.fields[f] for f in by_field):
        return None
    for constraint in target_for(task).constraints:
        constraint.repair(example, fields, moved)
    return replace(example, fields=fields)


def free_words(piece: Piece) -> list[Span]:
    """Word tokens of a piece that no protected span touches."""
    spans = token_spans(piece.text)
    return [span for span in spans if is_word(piece.text, span) and not overlaps(span, piece.protected)]


def rewrite_free_words(piece: Piece, rewrite_word: Callable[[str], str]) -> list[Edit]:
    """An edit for each free word that ``rewrite_word`` changes (word-level perturbations)."""
    edits = []
    for start, end in free_words(piece):
        new = rewrite_word(piece.text[start:end])
        if new != piece.text[start:end]:
            edits.append(Edit(start, end, new))
    return edits


def once_each(model: Texts, texts: list[str]) -> list[str]:
    """The model's output for each text, asking it once per distinct text (a MuSeRC passage comes
    with every answer option: all of them get the same output)."""
    distinct = list(dict.fromkeys(texts))
    outputs = dict(zip(distinct, model(distinct) if distinct else [], strict=True))
    return [outputs[text] for text in texts]
