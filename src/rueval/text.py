"""Russian text processing shared by heuristics, audits, slices and perturbations:
razdel for tokens and sentences, pymorphy3 for lemmas and grammemes."""

from __future__ import annotations

from functools import cache, lru_cache

import razdel


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
