"""RUSSE rules (Iazykova et al., 2021, Section 3.6, Table 6), tried in the table's order.

Tokens are razdel word tokens, lower-cased. "Tokens overlap" is, as Section 3.6 puts it, the
proportion of shared tokens to all tokens in both sentences (shared distinct tokens over the
distinct tokens of either). The target word's form in a sentence is the span given by
start/end, compared as given: the official spans often take in the space or punctuation after
the word ("здоровье " against "здоровье?"), and the authors' tool (WordInContextHeuristics in
tatiana-iazykova/check_your_heuristic) compares them so, which gives Table 6's 14% coverage
(13.8% on a sample of the official val set; reading words only would give 30%). When the
record has no valid span, it is the first word that pymorphy3 can read as a form of the
target (any of its analyses, since the target's own best reading may differ: "марка" is
first read as a form of "марк").
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from rueval.solvers.heuristics.base import Rule, normalized_words
from rueval.tasks import Example
from rueval.text import morph

TOKEN_OVERLAP = 0.10  # Table 6, row 2: "Tokens overlap by more than 10%"
LENGTH_GAP = 6  # Table 6, row 3: "differs from sentence 2 by more than 6"


def target_form(example: Example, sentence: int) -> str | None:
    """How the target word is written in sentence 1 or 2 (lower case), or None if it is not found."""
    text = example.text(f"sentence{sentence}")
    start, end = example.fields.get(f"start{sentence}"), example.fields.get(f"end{sentence}")
    if _is_index(start) and _is_index(end) and 0 <= start < end <= len(text):
        return text[start:end].lower().replace("ё", "е")
    target = example.text("word").lower().replace("ё", "е")
    return next((word for word in normalized_words(text) if target in _readings(word)), None)


@lru_cache(maxsize=100_000)
def _readings(word: str) -> frozenset[str]:
    """Every dictionary form pymorphy3 offers for a word, ё read as е (cached: words repeat)."""
    return frozenset(parse.normal_form.replace("ё", "е") for parse in morph().parse(word))


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def same_form(example: Example) -> bool:
    form = target_form(example, 1)
    return form is not None and form == target_form(example, 2)


def token_overlap(example: Example) -> bool:
    first = set(normalized_words(example.text("sentence1")))
    second = set(normalized_words(example.text("sentence2")))
    either = first | second
    return bool(either) and len(first & second) / len(either) > TOKEN_OVERLAP


def length_gap(example: Example) -> bool:
    lengths = [len(normalized_words(example.text(f"sentence{i}"))) for i in (1, 2)]
    return abs(lengths[0] - lengths[1]) > LENGTH_GAP


RULES = (
    Rule.predicting(True, same_form, "Target word in the same form"),
    Rule.predicting(True, token_overlap, "Tokens overlap by more than 10%"),
    Rule.predicting(False, length_gap, "Number of tokens in sentence 1 differs from sentence 2 by more than 6"),
)
