"""RUSSE rules (Iazykova et al., 2021, Section 3.6, Table 6), as the authors' code runs them.

rueval follows the authors' RusseSolver (RSG_RUSSE.ipynb, tatiana-iazykova/2020_HACK_RUSSIANSUPERGLUE)
where it and the paper differ:

- "Target word in the same form" predicts False. Table 6 prints True, a slip: the code predicts
  False, and on the official val set the rule is right 59% of the time as False (41% as True).
- Tokens are whitespace tokens (str.split), case kept. "Tokens overlap" is the shared distinct
  tokens over the distinct tokens of either sentence.
- Order: the combined solver (heruistic_combined) tries the length gap, then the token overlap,
  then the same form; Table 6 lists them the other way round. That solver's length gap is "more
  than 7", the single-rule solver's and the paper's "more than 6"; rueval keeps 6 (on the
  official val set the two give 62.55% and 62.53% accuracy).

The target word's form in a sentence is the span given by start/end, lower-cased and compared as
given: the official spans often take in the space or punctuation after the word ("здоровье "
against "здоровье?"), and the code compares them so, which gives Table 6's 14% coverage. When
the record has no valid span, it is the first word that pymorphy3 can read as a form of the
target (any of its analyses, since the target's own best reading may differ: "марка" is first
read as a form of "марк").
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, TypeGuard

from rueval.core.text import morph
from rueval.solvers.heuristics.base import Rule, normalized_words
from rueval.tasks import Example

TOKEN_OVERLAP = 0.10  # Table 6, row 2: "Tokens overlap by more than 10%"
LENGTH_GAP = 6  # Table 6, row 3: "differs from sentence 2 by more than 6"


def target_form(example: Example, sentence: int) -> str | None:
    """How the target word is written in sentence 1 or 2 (lower case), or None if it is not found."""
    text = example.text(f"sentence{sentence}")
    start, end = example.fields.get(f"start{sentence}"), example.fields.get(f"end{sentence}")
    if _is_index(start) and _is_index(end) and 0 <= start < end <= len(text):
        return text[start:end].lower()
    target = example.text("word").lower().replace("ё", "е")
    return next((word for word in normalized_words(text) if target in _readings(word)), None)


@lru_cache(maxsize=100_000)
def _readings(word: str) -> frozenset[str]:
    """Every dictionary form pymorphy3 offers for a word, ё read as е (cached: words repeat)."""
    return frozenset(parse.normal_form.replace("ё", "е") for parse in morph().parse(word))


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _tokens(example: Example, sentence: int) -> list[str]:
    return example.text(f"sentence{sentence}").split()


def length_gap(example: Example) -> bool:
    return abs(len(_tokens(example, 1)) - len(_tokens(example, 2))) > LENGTH_GAP


def token_overlap(example: Example) -> bool:
    first, second = set(_tokens(example, 1)), set(_tokens(example, 2))
    either = first | second
    return bool(either) and len(first & second) / len(either) > TOKEN_OVERLAP


def same_form(example: Example) -> bool:
    form = target_form(example, 1)
    return form is not None and form == target_form(example, 2)


RULES = (
    Rule.predicting(
        False, length_gap, "Number of tokens in sentence 1 differs from sentence 2 by more than 6"
    ),  # Table 6, row 3
    Rule.predicting(True, token_overlap, "Tokens overlap by more than 10%"),  # row 2
    Rule.predicting(False, same_form, "Target word in the same form"),  # row 1
)
