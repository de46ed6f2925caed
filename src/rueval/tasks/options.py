"""Inline answer options, as RuOpenBookQA and RuWorldTree write them: "stem (A) x (B) y (C) z (D) w"."""

from __future__ import annotations

import re

from rueval.errors import RuevalError

LETTERS = ("A", "B", "C", "D")
OPTION_MARK = re.compile(r"\(([A-Z])\)")  # "(A)" opens an inline answer option


def split_options(question: str, where: str = "question") -> tuple[str, dict[str, str]]:
    """RuOpenBookQA / RuWorldTree inline options: "stem (A) x (B) y (C) z (D) w" -> (stem, {"A": "x", ...}).

    ``where`` names the question in the error raised when the options are not (A) to (D) in order,
    each with some text.
    """
    marks = list(OPTION_MARK.finditer(question))
    found = [mark.group(1) for mark in marks]
    if found != list(LETTERS):
        shown = " ".join(f"({letter})" for letter in found) or "none"
        expected = "expected inline options (A) (B) (C) (D) in order"
        raise RuevalError(f"{where}: {expected}, found {shown}: {question!r:.120}")
    ends = [mark.start() for mark in marks[1:]] + [len(question)]
    options = {mark.group(1): question[mark.end() : end].strip() for mark, end in zip(marks, ends, strict=True)}
    empty = [letter for letter, text in options.items() if not text]
    if empty:
        raise RuevalError(f"{where}: option ({empty[0]}) has no text: {question!r:.120}")
    return question[: marks[0].start()].strip(), options
