"""TAPE's perturbations and attacks (Taktasheva et al., 2022, Section 4.2.1 and Table 1) on Russian
text, as TAPE's framework makes them (RussianNLP/rutransform; checked against its code on the same
1,000 sentences: benchmarks/rutransform_rates.py).

Each is a small plug-in with a name, a rate p (TAPE's "adversarial probability threshold") and a
seed (robustness.base). ``perturb`` returns a new Example whose declared input fields
(robustness.targets) are rewritten, with the gold answer untouched, or None when nothing could
change. Tokens overlapping a span a constraint protects are never changed, deleted or moved.

Rates: ButterFingers, ChangeCharCase - per letter; Emojify - per word found in the emoji
dictionary, and per number; EDA delete - per token; EDA swap - one swap in a sentence of n tokens
when max(1, p x n) is odd; BackTranslation - per sentence (robustness.model_based); AddSent - the
distractor is at most p x the words of the text it extends or replaces.
"""

from __future__ import annotations

import json
import math
import random
from functools import cache
from pathlib import Path

from rueval.core.text import lemma, parse, sentences
from rueval.robustness.base import Perturbation, free_words, rewrite_free_words
from rueval.robustness.model_based import AddSent, BackTranslation
from rueval.robustness.spans import Edit, Span, is_word, overlaps, substring_spans, token_spans
from rueval.robustness.targets import Piece

# --- word level ---------------------------------------------------------------------------------

_KEYBOARD_ROWS = ("йцукенгшщзхъ", "фывапролджэ", "ячсмитьбю")
_ROW_OFFSETS = (0.0, 0.25, 0.75)  # the rows' stagger on a standard keyboard, in key widths
_REACH = 2.0  # a slipping finger lands within two key widths


def _keyboard_neighbours() -> dict[str, str]:
    """The keys within two key widths of each key of the staggered Russian ЙЦУКЕН layout (itself excluded)."""
    place = {
        key: (column + _ROW_OFFSETS[row], row)
        for row, keys in enumerate(_KEYBOARD_ROWS)
        for column, key in enumerate(keys)
    }
    neighbours = {
        key: "".join(other for other, there in place.items() if other != key and math.dist(here, there) <= _REACH)
        for key, here in place.items()
    }
    neighbours["ё"] = neighbours["е"]
    return neighbours


KEYBOARD_NEIGHBOURS = _keyboard_neighbours()


class ButterFingers(Perturbation):
    """Typos: each letter is struck again with probability p, and the finger lands on a key within
    two key widths of it, the intended one included (TAPE's key map lists each key among its own
    neighbours, so a struck letter may stay: about p x 0.9 of the letters change)."""

    name = "butter_fingers"
    default_rate = 0.15

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        def typo(char: str) -> str:
            near = KEYBOARD_NEIGHBOURS.get(char.lower())
            if not near or rng.random() >= self.rate:
                return char
            key = rng.choice(char.lower() + near)
            return key.upper() if char.isupper() else key

        return rewrite_free_words(piece, lambda word: "".join(map(typo, word)))


class ChangeCharCase(Perturbation):
    """Each letter switches case with probability p."""

    name = "change_char_case"
    default_rate = 0.35

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        def flip(char: str) -> str:
            # len 1: "ß".swapcase() is "SS", which would shift every offset after it
            flippable = char.isalpha() and len(char.swapcase()) == 1
            return char.swapcase() if flippable and rng.random() < self.rate else char

        return rewrite_free_words(piece, lambda word: "".join(map(flip, word)))


EMOJI_FILE = Path(__file__).with_name("emoji_ru.json")


@cache
def emoji_dictionary() -> dict[str, list[str]]:
    """Russian lemma (lower case, ё as е) -> its emojis, generated from the CLDR Russian emoji names
    (rueval.robustness.emoji_dictionary)."""
    return json.loads(EMOJI_FILE.read_text(encoding="utf-8"))["lemmas"]


class Emojify(Perturbation):
    """As TAPE's Emojify: each word whose lemma has emojis in the dictionary becomes one of them, and
    each number its digits' keycaps, with probability p."""

    name = "emojify"
    default_rate = 0.4

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        dictionary = emoji_dictionary()

        def emojify(word: str) -> str:
            if word.isdecimal():
                if rng.random() >= self.rate:
                    return word
                return "".join(rng.choice(dictionary.get(digit, [digit])) for digit in word)
            emojis = dictionary.get(lemma(word))
            return rng.choice(emojis) if emojis and rng.random() < self.rate else word

        return rewrite_free_words(piece, emojify)


# --- sentence level (EDA, Wei and Zou, 2019, as TAPE's framework has it: deletion and swap) -----
#
# TAPE's EDA has two of the four operations of EDA, random deletion and random swap (no synonym
# replacement or insertion), on every token, punctuation included, one sentence at a time.

_FUNCTION_WORDS = frozenset({"PREP", "CONJ", "PRCL", "NPRO", "INTJ"})


def _is_stopword(word: str) -> bool:
    """A function word (pymorphy3: preposition, conjunction, particle, pronoun, interjection, a
    pronoun-like adjective such as этот or какой, or a form of быть), where TAPE's framework reads
    NLTK's Russian stopword list, which rueval does not ship."""
    found = parse(word.lower())
    return found.tag.POS in _FUNCTION_WORDS or "Apro" in found.tag or found.normal_form == "быть"


def _sentence_units(piece: Piece) -> list[Span]:
    """Where EDA works: each sentence of a text, or a whole stem or option of a multiple-choice question."""
    return [(0, len(piece.text))] if piece.role != "text" else substring_spans(piece.text, sentences(piece.text))


class EdaDelete(Perturbation):
    """Each token (word or punctuation) is deleted with probability p, with the space before it; in a
    sentence where none is, one stopword is (as TAPE's framework does). At least one word stays."""

    name = "eda_delete"
    default_rate = 0.3

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        if self.rate == 0:
            return []
        tokens = token_spans(piece.text)
        deleted: set[int] = set()
        for start, end in _sentence_units(piece):
            inside = [i for i, t in enumerate(tokens) if start <= t[0] and t[1] <= end]
            free = [i for i in inside if not overlaps(tokens[i], piece.protected)]
            chosen = {i for i in free if rng.random() < self.rate}
            stopwords = [i for i in free if _is_stopword(piece.text[tokens[i][0] : tokens[i][1]])]
            deleted |= chosen or ({rng.choice(stopwords)} if stopwords else set())
        words = [i for i, span in enumerate(tokens) if is_word(piece.text, span)]
        if words and set(words) <= deleted:
            deleted.discard(rng.choice(words))
        return _deletions(tokens, deleted)


def _deletions(tokens: list[Span], deleted: set[int]) -> list[Edit]:
    """Edits deleting the given tokens: each run from the end of the token before it ("A B C" -> "A
    C"), or at the start up to the next token ("A B" -> "B"); a run written against the next token
    keeps the space before it ("A «B»" -> "A B»", not "AB»")."""
    edits, i = [], 0
    while i < len(tokens):
        if i not in deleted:
            i += 1
            continue
        last = i
        while last + 1 in deleted:
            last += 1
        glued_to_next = last + 1 < len(tokens) and tokens[last][1] == tokens[last + 1][0]
        if i > 0 and glued_to_next and tokens[i - 1][1] < tokens[i][0]:
            edits.append(Edit(tokens[i][0], tokens[last][1], ""))
        elif i > 0:
            edits.append(Edit(tokens[i - 1][1], tokens[last][1], ""))
        else:
            end = tokens[last + 1][0] if last + 1 < len(tokens) else tokens[last][1]
            edits.append(Edit(tokens[i][0], end, ""))
        i = last + 1
    return edits


class EdaSwap(Perturbation):
    """Two random words of a sentence trade places (protected words stay put), as TAPE's framework
    does: it asks for max(1, p x n) swaps in a sentence of n tokens but re-seeds its generator before
    each, so it repeats one swap and an even count undoes it; where the two words read the same, two
    stopwords trade places instead. A multiple-choice question is swapped within the stem and each
    option. Punctuation stays in place (TAPE's may move a mark too: its output joins tokens with spaces)."""

    name = "eda_swap"
    default_rate = 0.3
    rate_lowered = False

    def rewrite(self, piece: Piece, rng: random.Random) -> list[Edit]:
        if self.rate == 0:
            return []
        free, tokens, edits = free_words(piece), token_spans(piece.text), []
        for start, end in _sentence_units(piece):
            inside = [span for span in free if start <= span[0] and span[1] <= end]
            count = sum(start <= t[0] and t[1] <= end for t in tokens)
            if len(inside) < 2 or max(1, int(self.rate * count)) % 2 == 0:
                continue
            pair = sorted(rng.sample(inside, 2))
            texts = [piece.text[s:e] for s, e in pair]
            if texts[0] == texts[1]:
                stopwords = [span for span in inside if _is_stopword(piece.text[span[0] : span[1]])]
                if len(stopwords) < 2:
                    continue
                pair = sorted(rng.sample(stopwords, 2))
                texts = [piece.text[s:e] for s, e in pair]
            if texts[0] != texts[1]:
                edits += [Edit(*pair[0], texts[1]), Edit(*pair[1], texts[0])]
        return edits


PERTURBATIONS: dict[str, type[Perturbation]] = {
    cls.name: cls for cls in (ButterFingers, Emojify, EdaDelete, EdaSwap, ChangeCharCase, BackTranslation, AddSent)
}
