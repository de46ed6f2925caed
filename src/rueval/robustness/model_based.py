"""The perturbations that need a model: BackTranslation (a translator each way) and AddSent (a
language model), as TAPE's framework makes them (RussianNLP/rutransform)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from rueval.core.text import sentences
from rueval.robustness.base import Perturbation, Texts, once_each
from rueval.robustness.constraints import entity_spans
from rueval.robustness.spans import Edit, Span, is_word, overlaps, substring_spans, token_spans
from rueval.robustness.targets import Piece


class BackTranslation(Perturbation):
    """Paraphrase through English (TAPE: OPUS-MT, Helsinki-NLP/opus-mt-ru-en and -en-ru), as TAPE's
    framework chooses what to translate: in a field of one sentence that sentence, in a longer one
    (or a multiple-choice question's stem and options) each sentence (part) with probability p;
    within it, each segment of three or more tokens outside named entities (natasha's NER) and
    protected spans is translated into English and back on its own, the rest kept verbatim."""

    name = "back_translation"
    default_rate = 0.5
    needs_model = "--translation-model"
    rate_lowered = False
    min_segment = 3  # tokens (rutransform's segment_length)

    def __init__(self, to_english: Texts, to_russian: Texts, rate: float | None = None, seed: int = 0):
        super().__init__(rate, seed)
        self.to_english, self.to_russian = to_english, to_russian

    def rewrite_examples(self, examples: list[list[Piece]], rngs: Sequence[random.Random]) -> list[list[list[Edit]]]:
        entity_spans.prepare([piece.text for split in examples for piece in split])
        chosen: list[tuple[int, int, Span]] = []  # (example, piece, segment span) to translate
        for e, (split, rng) in enumerate(zip(examples, rngs, strict=True)):
            units = [(p, span) for p, piece in enumerate(split) for span in _units(piece)]
            fields = [split[p].field for p, _ in units]
            for p, span in units:
                if fields.count(split[p].field) == 1 or rng.random() < self.rate:
                    chosen += [(e, p, segment) for segment in self.segments(split[p], span)]
        originals = [examples[e][p].text[s:t] for e, p, (s, t) in chosen]
        translations = once_each(lambda texts: self.to_russian(self.to_english(texts)), originals)
        edits: list[list[list[Edit]]] = [[[] for _ in split] for split in examples]
        for (e, p, (start, end)), new in zip(chosen, translations, strict=True):
            new = " ".join(new.split())
            if new and new != examples[e][p].text[start:end]:
                edits[e][p].append(Edit(start, end, new))
        return edits

    def segments(self, piece: Piece, unit: Span) -> list[Span]:
        """The runs of ``min_segment`` or more tokens of ``unit`` that touch no named entity or protected span."""
        fixed = [*piece.protected, *entity_spans(piece.text)]
        runs: list[list[Span]] = [[]]
        for token in token_spans(piece.text):
            if unit[0] <= token[0] and token[1] <= unit[1]:
                if overlaps(token, fixed):
                    runs.append([])
                else:
                    runs[-1].append(token)
        return [(run[0][0], run[-1][1]) for run in runs if len(run) >= self.min_segment]


def _units(piece: Piece) -> list[Span]:
    """The sentences of a text, or the whole stem or option of a multiple-choice question."""
    return substring_spans(piece.text, sentences(piece.text)) if piece.role == "text" else [(0, len(piece.text))]


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
                plans.append((e, rng.choice(wrong), stem.text, True))
            elif (d := next((p for p, piece in enumerate(split) if piece.distractor), None)) is not None:
                plans.append((e, d, split[d].text, False))
        continuations = once_each(self.generate, [prompt for _, _, prompt, _ in plans])
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
