"""What a heuristic rule is, and the text measures the rules of every task share.

Counts of words use razdel word tokens (punctuation excluded) and vocabularies use pymorphy3
lemmas, both from rueval.core.text, except where a task's module says its authors' code tokenises
otherwise: TERRa and RCB lemmatise runs of letters (``letter_lemma_set``), MuSeRC razdel tokens
stripped of punctuation (``stripped_lemmas``), and several rules count whitespace tokens.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from typing import Any

from rueval.core.text import lemmas, lemmas_of, parse, tokens, words
from rueval.tasks import Example


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
# the same texts (fitting the rule choice reads the whole train split): within a memoized_texts
# block (one fit, predict or coverage call) each text is analysed once, and the memos are emptied
# when the outermost block ends. Outside a block the functions compute afresh and keep nothing.
_MEMOS: list[dict[tuple[Any, ...], Any]] = []
_open_blocks = 0


def per_call_memo(function: Callable[..., Any]) -> Callable[..., Any]:
    """Memoize a function of texts (hashable arguments) for the duration of the memoized_texts block."""
    memo: dict[tuple[Any, ...], Any] = {}
    _MEMOS.append(memo)

    @wraps(function)
    def memoized(*args: Any) -> Any:
        if not _open_blocks:
            return function(*args)
        if args not in memo:
            memo[args] = function(*args)
        return memo[args]

    memoized.memo = memo  # type: ignore[attr-defined]  # for prefetch_lemmas
    return memoized


@contextmanager
def memoized_texts() -> Iterator[None]:
    """Keep every text's analyses until the block ends."""
    global _open_blocks
    _open_blocks += 1
    try:
        yield
    finally:
        _open_blocks -= 1
        if not _open_blocks:
            for memo in _MEMOS:
                memo.clear()


@per_call_memo
def lemma_sequence(text: str) -> tuple[str, ...]:
    """The text's lemmas in order."""
    return tuple(lemmas(text))


def prefetch_lemmas(texts: Iterable[str], label: str) -> None:
    """Lemmatise many texts at once (rueval.core.text.lemmas_of: in several processes when there is much
    text) into the open block's lemma_sequence memo, instead of one by one as the rules ask."""
    if not _open_blocks:
        return
    memo = lemma_sequence.memo  # type: ignore[attr-defined]
    missing = [text for text in dict.fromkeys(texts) if (text,) not in memo]
    memo.update(((text,), found) for text, found in lemmas_of(missing, label).items())


@per_call_memo
def lemma_set(text: str) -> frozenset[str]:
    """The text's vocabulary, lemmatised."""
    return frozenset(lemma_sequence(text))


@per_call_memo
def word_count(text: str) -> int:
    return len(words(text))


@per_call_memo
def normalized_words(text: str) -> tuple[str, ...]:
    """Lower-cased word tokens with ё read as е, for matching fixed words and phrases."""
    return tuple(word.lower().replace("ё", "е") for word in words(text))


# The TERRa and RCB notebooks' words_only: runs of [А-Яа-яA-z] in the lower-cased text. The range
# leaves out ё (a word breaks there: "всё" gives "вс") and digits, and A-z takes in [\]^_`.
_LETTER_RUN = re.compile("[А-Яа-яA-z]+")


@per_call_memo
def letter_lemma_set(text: str) -> frozenset[str]:
    """The lemmas (pymorphy's first analysis) of the text's letter runs, as the TERRa and RCB notebooks take them."""
    return frozenset(parse(word).normal_form for word in _LETTER_RUN.findall(text.lower()))


# The authors' RSG_MorphAnalyzer (utils.py) strips these from both ends of each razdel token.
_PUNCTUATION = string.punctuation + "«»—…–“”"


@per_call_memo
def stripped_lemmas(text: str) -> tuple[str, ...]:
    """Lemmas of the razdel tokens stripped of punctuation and lower-cased (empty ones dropped), as
    the authors' RSG_MorphAnalyzer takes them (MuSeRC); repeats are kept."""
    stripped = (token.strip(_PUNCTUATION).lower() for token in tokens(text))
    return tuple(parse(token).normal_form for token in stripped if token)


@per_call_memo
def stripped_lemma_set(text: str) -> frozenset[str]:
    return frozenset(stripped_lemmas(text))


def count_runs(sequence: Sequence[str], run: Sequence[str]) -> int:
    """How many times ``run`` occurs as a contiguous part of ``sequence`` (overlapping occurrences too)."""
    n = len(run)
    if not n:
        return 0
    sequence, run = tuple(sequence), tuple(run)
    if n == 1:
        return sequence.count(run[0])
    count, start = 0, 0
    while True:  # jump from one occurrence of the run's first item to the next (index scans in C)
        try:
            start = sequence.index(run[0], start)
        except ValueError:
            return count
        count += sequence[start : start + n] == run
        start += 1
