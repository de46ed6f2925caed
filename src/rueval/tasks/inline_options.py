"""Inline answer options, as RuOpenBookQA and RuWorldTree write them: "stem (A) x (B) y (C) z (D) w".

An item has as many options as it writes, lettered from (A) on: most official items have four,
some RuWorldTree items five, (A) to (E). Prompts, answer letters, baselines and metrics follow
each item's own options.
"""

from __future__ import annotations

import re
import string

from rueval.core.errors import RuevalError

LETTERS = tuple(string.ascii_uppercase)  # the answer letters an item may use, (A) first
MIN_OPTIONS = 2
OPTION_MARK = re.compile(r"\(([A-Z])\)")  # "(A)" opens an inline answer option

Span = tuple[int, int]


def option_spans(question: str, where: str = "question") -> tuple[Span, dict[str, Span]]:
    """Where the stem and each option's text lie in the question, markers excluded, untrimmed.

    The options are the marks (A), (B), ... that run in order to the end of the question, from its
    last (A) (a stem may quote a letter in parentheses); a RuevalError names ``where`` when there
    are fewer than two, when they skip or repeat a letter, or when one has no text.
    """
    marks = list(OPTION_MARK.finditer(question))
    first = max((i for i, mark in enumerate(marks) if mark.group(1) == "A"), default=len(marks))
    found = [mark.group(1) for mark in marks[first:]]
    if len(found) < MIN_OPTIONS or found != list(LETTERS[: len(found)]):
        shown = " ".join(f"({letter})" for letter in (found or [m.group(1) for m in marks])) or "none"
        expected = "expected inline options (A) (B) ... in order, at least two"
        raise RuevalError(f"{where}: {expected}, found {shown}: {question!r:.120}")
    chain = marks[first:]
    ends = [mark.start() for mark in chain[1:]] + [len(question)]
    spans = {mark.group(1): (mark.end(), end) for mark, end in zip(chain, ends, strict=True)}
    empty = [letter for letter, (start, end) in spans.items() if not question[start:end].strip()]
    if empty:
        raise RuevalError(f"{where}: option ({empty[0]}) has no text: {question!r:.120}")
    return (0, chain[0].start()), spans


def split_options(question: str, where: str = "question") -> tuple[str, dict[str, str]]:
    """A question with inline options -> (stem, {"A": "x", "B": "y", ...}), texts stripped, in letter order.

    ``where`` names the question in the error raised when its options cannot be read (option_spans).
    """
    (stem_start, stem_end), spans = option_spans(question, where)
    options = {letter: question[start:end].strip() for letter, (start, end) in spans.items()}
    return question[stem_start:stem_end].strip(), options
