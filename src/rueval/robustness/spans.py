"""Character spans and edits: how perturbations rewrite text while keeping protected spans intact
and knowing where those spans end up (MultiQ answer offsets, RUSSE target words)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rueval.core.text import tokens

Span = tuple[int, int]  # [start, end) character offsets


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] with ``text``."""

    start: int
    end: int
    text: str


def substring_spans(text: str, parts: Iterable[str]) -> list[Span]:
    """Where each of ``parts`` (consecutive substrings of ``text``, as a tokenizer returns them) lies."""
    spans, position = [], 0
    for part in parts:
        start = text.index(part, position)
        position = start + len(part)
        spans.append((start, position))
    return spans


def token_spans(text: str) -> list[Span]:
    """The spans of razdel's tokens (rueval.core.text.tokens), words and punctuation alike."""
    return substring_spans(text, tokens(text))


def is_word(text: str, span: Span) -> bool:
    return any(ch.isalnum() for ch in text[span[0] : span[1]])


def overlaps(span: Span, protected: Iterable[Span]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in protected)


def tighten(text: str, spans: Iterable[Span]) -> list[Span]:
    """Spans inside ``text`` without surrounding whitespace, empty ones dropped, sorted, deduplicated."""
    tight = set()
    for start, end in spans:
        start, end = max(0, start), min(len(text), end)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            tight.add((start, end))
    return sorted(tight)


def find_all(text: str, needle: str) -> list[Span]:
    """Every occurrence of ``needle`` in ``text`` (non-overlapping, left to right)."""
    spans, start = [], text.find(needle) if needle else -1
    while start >= 0:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + len(needle))
    return spans


def apply_edits(text: str, edits: Iterable[Edit], protected: Iterable[Span]) -> tuple[str, dict[Span, Span]]:
    """Apply non-overlapping edits; return the new text and where each protected span now lies.

    A protected span moves by the length change of the edits before it; one an edit touches is a
    bug in the perturbation, so it raises.
    """
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in zip(ordered, ordered[1:]):
        if after.start < before.end:
            raise ValueError(f"overlapping edits {before.start}:{before.end} and {after.start}:{after.end}")
    parts, position = [], 0
    for edit in ordered:
        parts += [text[position : edit.start], edit.text]
        position = edit.end
    parts.append(text[position:])
    moved: dict[Span, Span] = {}
    for span in protected:
        shift = 0
        for edit in ordered:
            if edit.end <= span[0]:  # wholly before the span (an insertion at its start too)
                shift += len(edit.text) - (edit.end - edit.start)
            elif edit.start < span[1] and span[0] < edit.end:
                raise ValueError(f"edit {edit.start}:{edit.end} touches protected span {span[0]}:{span[1]}")
        moved[span] = (span[0] + shift, span[1] + shift)
    return "".join(parts), moved
