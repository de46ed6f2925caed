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

# Below this many new word forms, starting worker processes costs more than it saves.
PARALLEL_MIN_FORMS = 50_000

# Lower-cased word form -> lemma: each distinct form is parsed once per process, whichever text,
# command or rule asks (a dict, not an lru_cache, so lemmas_of can fill it from worker processes).
_LEMMAS: dict[str, str] = {}


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
    form = word.lower()
    found = _LEMMAS.get(form)
    if found is None:
        found = _LEMMAS[form] = _lemma_of_form(form)
    return found


def _lemma_of_form(form: str) -> str:
    return parse(form).normal_form.replace("ё", "е")


def lemmas(text: str) -> list[str]:
    """Lower-cased lemmas of the words of a text."""
    return [lemma(word) for word in words(text)]


def lemmas_of(texts: Iterable[str], label: str = "lemmatising") -> dict[str, list[str]]:
    """The lemmas of each distinct text: each text tokenised once, each new word form parsed once,
    many new forms in several processes. Workers are forked: they inherit the loaded analyser,
    and the command line's entry point is not re-run."""
    distinct = list(dict.fromkeys(texts))
    tokenised = {text: words(text) for text in progress(distinct, label, total=len(distinct))}
    forms = list(
        dict.fromkeys(word.lower() for found in tokenised.values() for word in found if word.lower() not in _LEMMAS)
    )
    workers = min(os.cpu_count() or 1, 8)
    if workers >= 2 and len(forms) >= PARALLEL_MIN_FORMS:
        morph()  # loaded once, before the fork
        chunk = max(1, min(2000, len(forms) // (8 * workers)))
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            found = progress(pool.map(_lemma_of_form, forms, chunksize=chunk), f"{label}: word forms", total=len(forms))
            # unpickled strings are new objects: interned, each lemma is held once
            _LEMMAS.update((form, sys.intern(found_lemma)) for form, found_lemma in zip(forms, found))
    return {text: [lemma(word) for word in found] for text, found in tokenised.items()}
