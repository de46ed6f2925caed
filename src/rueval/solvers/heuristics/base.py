"""What a heuristic rule is, and the text measures the rules of every task share.

Counts of words use razdel word tokens (punctuation excluded) and vocabularies use pymorphy3
lemmas, both from rueval.text; the one rule set the paper runs on a plain whitespace split
(LiDiRus) says so in its own module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rueval.tasks import Example
from rueval.text import lemmas, words


@dataclass(frozen=True)
class Rule:
    """One if-statement of the paper's rule functions.

    ``apply`` returns the rule's prediction for an example, or None when the rule does not fire.
    ``target`` is the label a rule predicts whenever it fires; None for rules that compute the
    answer from the example (which PARus choice, which RuCoS entity).
    """

    name: str  # short snake_case id
    description: str  # the paper's table row, in English
    target: Any
    apply: Callable[[Example], Any | None]

    @classmethod
    def predicting(cls, target: Any, fires: Callable[[Example], bool], description: str) -> Rule:
        """A rule that predicts ``target`` wherever the predicate ``fires``; named after the predicate."""
        return cls(fires.__name__, description, target, lambda example: target if fires(example) else None)


# Passages are shared by many MuSeRC answers and RuCoS queries, and every rule of a task reads
# the same texts (fitting the rule choice reads the whole train split): lemmatise each text once.
@lru_cache(maxsize=1 << 15)
def lemma_sequence(text: str) -> tuple[str, ...]:
    """The text's lemmas in order."""
    return tuple(lemmas(text))


def lemma_set(text: str) -> frozenset[str]:
    """The text's vocabulary, lemmatised."""
    return frozenset(lemma_sequence(text))


def word_count(text: str) -> int:
    return len(words(text))


def normalized_words(text: str) -> list[str]:
    """Lower-cased word tokens with ё read as е, for matching fixed words and phrases."""
    return [word.lower().replace("ё", "е") for word in words(text)]


def vocabulary_share(part: str, whole: str) -> float:
    """The share of ``part``'s lemma vocabulary that also occurs in ``whole`` (0 for an empty part)."""
    vocabulary = lemma_set(part)
    return len(vocabulary & lemma_set(whole)) / len(vocabulary) if vocabulary else 0.0


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as a run of whole words, ignoring case and punctuation."""
    needle = " ".join(normalized_words(phrase))
    return bool(needle) and f" {needle} " in f" {' '.join(normalized_words(text))} "


def count_runs(sequence: Sequence[str], run: Sequence[str]) -> int:
    """How many times ``run`` occurs as a contiguous part of ``sequence``."""
    n = len(run)
    if not n:
        return 0
    return sum(1 for i in range(len(sequence) - n + 1) if tuple(sequence[i : i + n]) == tuple(run))
