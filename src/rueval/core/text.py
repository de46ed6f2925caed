"""Russian text processing shared by heuristics, audits, slices and perturbations:
razdel for tokens and sentences, pymorphy3 for lemmas and grammemes."""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from functools import cache, lru_cache
from itertools import chain

import razdel
from razdel.segmenters.punct import DASHES

from rueval.core.progress import counting, progress

# Below this many characters of distinct text, starting worker processes costs more than it saves.
PARALLEL_MIN_CHARS = 5_000_000
# Distinct pieces of text (see _INDEPENDENT_GAP) whose tokens and word forms are kept, ~100 bytes each.
PIECE_CACHE = 1_000_000

# Lower-cased word form -> lemma: each distinct form is parsed once per process, whichever text,
# command or rule asks (a dict, not an lru_cache, so lemmas_of can fill it from worker processes).
_LEMMAS: dict[str, str] = {}


# Whitespace where razdel's tokeniser cannot join or look across, so the text on each side can be
# tokenised apart with the same result. razdel never joins atoms across whitespace, but its
# dash/underscore/float/fraction rules (razdel.segmenters.tokenize.Rule2112) decide about a
# delimiter atom next to whitespace by the atom beyond that whitespace: a dash or "_" on either
# side, or ".,/\\" on one side with a digit on the other. Those gaps are kept inside a piece; the
# others cut. Possessive \s++ so that a gap is judged by the characters around the whole run.
_CONTEXT = re.escape(DASHES + "_")
_NUMERIC = re.escape(".,/\\")
_INDEPENDENT_GAP = re.compile(
    rf"(?<=[{_NUMERIC}])\s++(?![{_CONTEXT}\d])"
    rf"|(?<=\d)\s++(?![{_CONTEXT}{_NUMERIC}])"
    rf"|(?<=[^\s\d{_CONTEXT}{_NUMERIC}])\s++(?![{_CONTEXT}])"
)


def tokens(text: str) -> list[str]:
    """Tokens with punctuation, as razdel splits them: each piece between independent gaps is
    tokenised once per process (real text repeats its pieces: "слово", "России.", "(2019)")."""
    return list(chain.from_iterable(map(_piece_tokens, _INDEPENDENT_GAP.split(text))))


def words(text: str) -> list[str]:
    """Tokens that contain a letter or a digit."""
    return [token for token in tokens(text) if _is_word(token)]


def _is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


# A run of Cyrillic letters, of Latin letters or of digits is one razdel atom, hence one token.
_ONE_ATOM = re.compile(r"[а-яё]+|[a-z]+|\d+", re.IGNORECASE)


@lru_cache(maxsize=PIECE_CACHE)
def _piece_tokens(piece: str) -> tuple[str, ...]:
    if _ONE_ATOM.fullmatch(piece):
        return (piece,)
    return tuple(token.text for token in razdel.tokenize(piece))


@lru_cache(maxsize=PIECE_CACHE)
def _piece_forms(piece: str) -> tuple[str, ...]:
    """The piece's words, lower-cased: the keys of _LEMMAS."""
    return tuple(sys.intern(token.lower()) for token in _piece_tokens(piece) if _is_word(token))


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
    # not through parse(): _LEMMAS keeps the lemma, so the analysis need not be kept too
    return morph().parse(form)[0].normal_form.replace("ё", "е")


def lemmas(text: str) -> list[str]:
    """Lower-cased lemmas of the words of a text."""
    forms = word_forms(text)
    return [known if (known := _LEMMAS.get(form)) is not None else lemma(form) for form in forms]


def word_forms(text: str) -> tuple[str, ...]:
    """The text's words, lower-cased."""
    return tuple(chain.from_iterable(map(_piece_forms, _INDEPENDENT_GAP.split(text))))


def lemmas_of(texts: Iterable[str], label: str = "lemmatising") -> dict[str, tuple[str, ...]]:
    """The lemmas of each distinct text, each new word form parsed once. Much text is tokenised,
    and its new forms parsed, in worker processes. Workers are forked: they inherit the loaded
    analyser, and the command line's entry point is not re-run."""
    distinct = list(dict.fromkeys(texts))
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or sum(map(len, distinct)) < PARALLEL_MIN_CHARS:
        return {text: tuple(lemmas(text)) for text in progress(distinct, label, total=len(distinct))}
    morph()  # loaded once, before the fork
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        forms = _in_chunks(pool, _word_forms_of, distinct, workers, label)
        new = list(set(chain.from_iterable(forms)).difference(_LEMMAS))
        parsed = _in_chunks(pool, _lemmas_of_forms, new, workers, f"{label}: word forms")
        # unpickled strings are new objects: interned, each form and lemma is held once
        _LEMMAS.update(zip(map(sys.intern, new), map(sys.intern, parsed), strict=True))
    return {text: tuple(map(_LEMMAS.__getitem__, text_forms)) for text, text_forms in zip(distinct, forms, strict=True)}


def _in_chunks(
    pool: ProcessPoolExecutor, function: Callable[[list], list], items: list, workers: int, label: str
) -> list:
    """``function`` (from a list of items to a list of results) over ``items``, chunk by chunk in the pool."""
    size = max(1, min(2000, len(items) // (8 * workers)))
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    results: list = []
    with counting(label, len(items)) as counter:
        for chunk_results in pool.map(function, chunks):
            results.extend(chunk_results)
            counter.advance(len(chunk_results))
    return results


def _word_forms_of(texts: list[str]) -> list[tuple[str, ...]]:
    return [word_forms(text) for text in texts]


def _lemmas_of_forms(forms: list[str]) -> list[str]:
    return [_lemma_of_form(form) for form in forms]
