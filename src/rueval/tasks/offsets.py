"""A target word's character offsets (RUSSE's start1/end1, start2/end2), read in every convention
the official files use.

Measured on the official RUSSE val file (17,010 offset pairs): in 99.4% ``end`` lies one past the
word (``sentence[start:end]`` takes in the space or punctuation after it, and ``end`` exceeds the
sentence's length when the word ends it), in 0.6% one short of it ("жаб" for "жаба"), and one
pair starts on the word's last letter. Others end exactly at the word. rueval finds the word the
offsets point at, whichever convention, and says nothing: the word is the run of letters and
digits (with inner hyphens) that the span, clipped to the sentence, touches first.
"""

from __future__ import annotations

import re
from typing import Any

WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")

Span = tuple[int, int]


def word_span(text: str, start: Any, end: Any) -> Span | None:
    """The word that offsets ``start``/``end`` point at in ``text``, as [start, end) of the word
    itself; None when they are not offsets of a word in it (not integers, outside the text, or
    over no letter or digit). ``end`` may lie one past the text, as the official files have it."""
    if not (_is_int(start) and _is_int(end) and 0 <= start < len(text) and start < end <= len(text) + 1):
        return None
    for match in WORD.finditer(text):
        if match.end() > start and match.start() < min(end, len(text)):
            return match.span()
        if match.start() >= end:
            break
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
