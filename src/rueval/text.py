"""Russian text processing shared by heuristics, audits, slices and perturbations:
razdel for tokens and sentences, pymorphy3 for lemmas and grammemes."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from functools import cache, lru_cache

import razdel

from rueval.progress import progress

# Below this many characters of distinct text, starting worker processes costs more than it saves.
PARALLEL_MIN_CHARS = 2_000_000


def tokens(text: str) -> list[str]:
    """Tokens with punctuation, as razdel splits them."""
    return [token.text for token in razdel.tokenize(text)]


def words(text: str) -> list[str]:
    """Tokens that contain a letter or a digit."""
    return [token for token in tokens(text) if any(ch.isalnum() for ch in token)]


def sentences(text: str) -> list[str]:
    return [sentence.text for sentence in razdel.sentenize(text)]


@cache
def morph():
    """The pymorphy3 analyser, loaded once (about 15 MB of dictionaries)."""
    import pymorphy3

    return pymorphy3.MorphAnalyzer()


@lru_cache(maxsize=200_000)
def parse(word: str):
    """The most probable pymorphy3 analysis of a word."""
    return morph().parse(word)[0]


def lemma(word: str) -> str:
    return parse(word.lower()).normal_form.replace("ё", "е")


def lemmas(text: str) -> list[str]:
    """Lower-cased lemmas of the words of a text."""
    return [lemma(word) for word in words(text)]


def lemmas_of(texts: Iterable[str], label: str = "lemmatising") -> dict[str, list[str]]:
    """The lemmas of each distinct text, each lemmatised once; many texts in several processes.
    Workers are forked: they inherit the loaded analyser, and the command line's entry point is not re-run."""
    distinct = list(dict.fromkeys(texts))
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or sum(map(len, distinct)) < PARALLEL_MIN_CHARS:
        return {text: lemmas(text) for text in progress(distinct, label, total=len(distinct))}
    morph()  # loaded once, before the fork
    chunk = max(1, min(500, len(distinct) // (8 * workers)))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        found = progress(pool.map(lemmas, distinct, chunksize=chunk), label, total=len(distinct))
        # unpickled strings are new objects: interned, each lemma is held once
        return {text: [sys.intern(lemma) for lemma in found_lemmas] for text, found_lemmas in zip(distinct, found)}
