"""TAPE's perturbations and attacks (Taktasheva et al., 2022, Section 4.2.1 and Table 1) on Russian text.

Each is a small plug-in with a name, a rate p (TAPE's "adversarial probability threshold") and a
seed. ``perturb`` returns a new Example whose declared input fields (robustness.targets) are
rewritten, with the gold answer untouched, or None when nothing could change. Tokens overlapping
a span a constraint protects are never changed, deleted or moved.

Rates: ButterFingers, ChangeCharCase - per letter; Emojify - per word found in the emoji
dictionary, and per number; EDA delete - per word; EDA swap - none (one swap per sentence);
BackTranslation - per sentence; AddSent - the distractor is at most p x the words of the text it
extends or replaces.
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from rueval.errors import RuevalError
from rueval.robustness.constraints import Protected
from rueval.robustness.spans import (
    Edit,
    Span,
    apply_edits,
    is_word,
    locate_in_order,
    overlaps,
    substring_spans,
    token_spans,
)
from rueval.robustness.targets import Piece, pieces, protected_spans_batch, target_for
from rueval.tasks import Example, Task
from rueval.text import lemma, sentences

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

    def rng(self, task: Task, example: Example) -> random.Random:
        """A generator seeded by the example itself, so its perturbation does not depend on the
        batch it comes in. MuSeRC answers of one question (RuCoS queries of one passage) share it,
        so they see the same perturbed passage."""
        anchor = example.idx[:-1] if isinstance(example.idx, tuple) else example.idx
        return random.Random(f"{self.seed}/{self.name}/{task.name}/{anchor}")

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
            kept = {(s + piece.start, e + piece.start): new for (s, e), new in edit.kept.items()}
            shifted = Edit(edit.start + piece.start, edit.end + piece.start, edit.text, kept)
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


# --- word level ---------------------------------------------------------------------------------

_KEYBOARD_ROWS = ("йцукенгшщзхъ", "фывапролджэ", "ячсмитьбю")


def _keyboard_neighbours() -> dict[str, str]:
    """Keys next to each key of the Russian ЙЦУКЕН layout: left and right, and the two touching
    keys of the staggered rows above (same and next column) and below (previous and same)."""
    neighbours = {}
    for r, row in enumerate(_KEYBOARD_ROWS):
        for c, key in enumerate(row):
            near = [row[i] for i in (c - 1, c + 1) if 0 <= i < len(row)]
            if r > 0:
                near += [_KEYBOARD_ROWS[r - 1][i] for i in (c, c + 1) if i < len(_KEYBOARD_ROWS[r - 1])]
            if r + 1 < len(_KEYBOARD_ROWS):
                near += [_KEYBOARD_ROWS[r + 1][i] for i in (c - 1, c) if 0 <= i < len(_KEYBOARD_ROWS[r + 1])]
            neighbours[key] = "".join(near)
    neighbours["ё"] = neighbours["е"]
    return neighbours


KEYBOARD_NEIGHBOURS = _keyboard_neighbours()


class ButterFingers(Perturbation):
    """Typos: each letter becomes a neighbouring key of the ЙЦУКЕН keyboard with probability p."""

    name = "butter_fingers"
    default_rate = 0.15

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        def typo(char: str) -> str:
            near = KEYBOARD_NEIGHBOURS.get(char.lower())
            if not near or rng.random() >= self.rate:
                return char
            key = rng.choice(near)
            return key.upper() if char.isupper() else key

        return rewrite_free_words(piece, lambda word: "".join(map(typo, word)))


class ChangeCharCase(Perturbation):
    """Each letter switches case with probability p."""

    name = "change_char_case"
    default_rate = 0.35

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        def flip(char: str) -> str:
            # len 1: "ß".swapcase() is "SS", which would shift every offset after it
            flippable = char.isalpha() and len(char.swapcase()) == 1
            return char.swapcase() if flippable and rng.random() < self.rate else char

        return rewrite_free_words(piece, lambda word: "".join(map(flip, word)))


EMOJI_FILE = Path(__file__).with_name("emoji_ru.json")


@cache
def emoji_dictionary() -> dict[str, list[str]]:
    """Russian lemma (lower case, ё as е) -> its emojis, generated from the CLDR Russian emoji names
    (rueval.robustness.emoji_dictionary)."""
    return json.loads(EMOJI_FILE.read_text(encoding="utf-8"))["lemmas"]


class Emojify(Perturbation):
    """As TAPE's Emojify: each word whose lemma has emojis in the dictionary becomes one of them, and
    each number its digits' keycaps, with probability p."""

    name = "emojify"
    default_rate = 0.4

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        dictionary = emoji_dictionary()

        def emojify(word: str) -> str:
            if word.isdecimal():
                if rng.random() >= self.rate:
                    return word
                return "".join(rng.choice(dictionary.get(digit, [digit])) for digit in word)
            emojis = dictionary.get(lemma(word))
            return rng.choice(emojis) if emojis and rng.random() < self.rate else word

        return rewrite_free_words(piece, emojify)


# --- sentence level (EDA, Wei and Zou, 2019) ----------------------------------------------------


class EdaDelete(Perturbation):
    """Each word is deleted with probability p, with the space before it; at least one word stays."""

    name = "eda_delete"
    default_rate = 0.3

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        tokens = token_spans(piece.text)
        words = [i for i, span in enumerate(tokens) if is_word(piece.text, span)]
        free = [i for i in words if not overlaps(tokens[i], piece.protected)]
        deleted = {i for i in free if rng.random() < self.rate}
        if deleted and len(deleted) == len(words):
            deleted.discard(rng.choice(sorted(deleted)))
        edits, i = [], 0
        while i < len(tokens):
            if i not in deleted:
                i += 1
                continue
            last = i
            while last + 1 in deleted:
                last += 1
            if i > 0:  # from the end of the previous token: "A B C" -> "A C"
                edits.append(Edit(tokens[i - 1][1], tokens[last][1], ""))
            else:  # at the start, up to the next token: "A B" -> "B"
                end = tokens[last + 1][0] if last + 1 < len(tokens) else tokens[last][1]
                edits.append(Edit(tokens[i][0], end, ""))
            i = last + 1
        return edits


class EdaSwap(Perturbation):
    """Two random words of each sentence trade places, once (protected words stay put). A text of
    several options (multiple choice) is swapped within the stem and each option.

    TAPE's framework asks for max(1, p x words) swaps but re-seeds its generator before each, so it
    repeats one swap (an even count undoes it, and then only its EDA deletion remains): its
    published data shows at most one swap per sentence. The rate does not matter beyond 0 (none)."""

    name = "eda_swap"
    default_rate = 0.3
    rate_lowered = False

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        if self.rate == 0:
            return []
        free = free_words(piece)
        units = [(0, len(piece.text))] if piece.role != "text" else substring_spans(piece.text, sentences(piece.text))
        edits = []
        for start, end in units:
            inside = [span for span in free if start <= span[0] and span[1] <= end]
            if len(inside) < 2:
                continue
            (a_start, a_end), (b_start, b_end) = sorted(rng.sample(inside, 2))
            a_text, b_text = piece.text[a_start:a_end], piece.text[b_start:b_end]
            if a_text != b_text:
                edits += [Edit(a_start, a_end, b_text), Edit(b_start, b_end, a_text)]
        return edits


# --- model based --------------------------------------------------------------------------------


class BackTranslation(Perturbation):
    """Paraphrase: each sentence is translated into English and back with probability p (TAPE
    uses OPUS-MT). A sentence holding protected spans is kept unless they all survive verbatim."""

    name = "back_translation"
    default_rate = 0.5
    needs_model = "--translation-model"
    rate_lowered = False

    def __init__(self, to_english: Texts, to_russian: Texts, rate: float | None = None, seed: int = 0):
        super().__init__(rate, seed)
        self.to_english, self.to_russian = to_english, to_russian

    def rewrite_examples(self, examples: list[list[Piece]], rngs: Sequence[random.Random]) -> list[list[list[Edit]]]:
        chosen: list[tuple[int, int, Span]] = []  # (example, piece, sentence span) to translate
        for e, (split, rng) in enumerate(zip(examples, rngs, strict=True)):
            for p, piece in enumerate(split):
                spans = substring_spans(piece.text, sentences(piece.text))
                chosen += [(e, p, span) for span in spans if rng.random() < self.rate]
        originals = [examples[e][p].text[s:t] for e, p, (s, t) in chosen]
        translations = _once_each(lambda texts: self.to_russian(self.to_english(texts)), originals)
        edits: list[list[list[Edit]]] = [[[] for _ in split] for split in examples]
        for (e, p, (start, end)), new in zip(chosen, translations, strict=True):
            piece, new = examples[e][p], " ".join(new.split())
            inside = [span for span in piece.protected if start < span[1] and span[0] < end]
            if not new or new == piece.text[start:end] or any(s < start or t > end for s, t in inside):
                continue
            found = locate_in_order(new, [piece.text[s:t] for s, t in inside])
            if found is not None:
                edits[e][p].append(Edit(start, end, new, dict(zip(inside, found))))
        return edits


def _once_each(model: Texts, texts: list[str]) -> list[str]:
    """The model's output for each text, asking it once per distinct text (a MuSeRC passage comes
    with every answer option: all of them get the same output)."""
    distinct = list(dict.fromkeys(texts))
    outputs = dict(zip(distinct, model(distinct) if distinct else [], strict=True))
    return [outputs[text] for text in texts]


class AddSent(Perturbation):
    """Distraction: a language model continues the text and its first sentence is appended (TAPE:
    mGPT, sampling). In multiple-choice questions the continuation of the stem replaces one wrong
    option instead. The distractor is cut to at most p x the words of what it extends or replaces."""

    name = "add_sent"
    default_rate = 0.5
    needs_model = "--addsent-model"
    rate_lowered = False

    def __init__(self, generate: Texts, rate: float | None = None, seed: int = 0):
        super().__init__(rate, seed)
        self.generate = generate

    def rewrite_examples(self, examples: list[list[Piece]], rngs: Sequence[random.Random]) -> list[list[list[Edit]]]:
        plans: list[tuple[int, int, str, bool]] = []  # (example, piece to change, prompt, replace it?)
        for e, (split, rng) in enumerate(zip(examples, rngs, strict=True)):
            stem = next((piece for piece in split if piece.role == "stem"), None)
            wrong = [p for p, piece in enumerate(split) if piece.role == "option" and not piece.protected]
            if stem is not None and wrong:
                p = rng.choice(wrong)
                plans.append((e, p, stem.text, True))
            elif (p := next((p for p, piece in enumerate(split) if piece.distractor), None)) is not None:
                plans.append((e, p, split[p].text, False))
        continuations = _once_each(self.generate, [prompt for _, _, prompt, _ in plans])
        edits: list[list[list[Edit]]] = [[[] for _ in split] for split in examples]
        for (e, p, _, replaces), continuation in zip(plans, continuations, strict=True):
            piece = examples[e][p]
            limit = max(1, math.ceil(self.rate * sum(is_word(piece.text, s) for s in token_spans(piece.text))))
            distractor = _first_words(continuation, limit, drop="()" if replaces else "")
            if not distractor:
                continue
            if replaces:
                edits[e][p].append(Edit(0, len(piece.text), distractor))
            else:
                edits[e][p].append(Edit(len(piece.text), len(piece.text), " " + distractor))
        return edits


def _first_words(text: str, limit: int, drop: str = "") -> str:
    """The first sentence of ``text``, cut after ``limit`` words, one line, without ``drop`` characters."""
    text = " ".join("".join(c for c in text if c not in drop).split())
    first = next(iter(sentences(text)), "") if text else ""
    word_ends = [end for start, end in token_spans(first) if is_word(first, (start, end))]
    if not word_ends:
        return ""
    return first[: word_ends[limit - 1]] if len(word_ends) > limit else first


PERTURBATIONS: dict[str, type[Perturbation]] = {
    cls.name: cls for cls in (ButterFingers, Emojify, EdaDelete, EdaSwap, ChangeCharCase, BackTranslation, AddSent)
}


def describe(perturbations: Sequence[Perturbation]) -> list[dict[str, Any]]:
    """Name, rate and seed of each perturbation, for results.json and the resume fingerprint."""
    return [{"name": p.name, "rate": p.rate, "seed": p.seed} for p in perturbations]
