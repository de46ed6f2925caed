"""Emojify's dictionary, Russian lemma -> emojis, built from a maintained source: the Russian CLDR emoji
names that the `emoji` package ships (emoji.EMOJI_DATA, language "ru"), each name's words reduced to
their pymorphy3 lemmas. TAPE's own dictionary (RussianNLP/rutransform, emoji_dict_ru.json) has about
1,900 lemmas, digits included; this one is of that size.

The dictionary is generated once and committed beside this module (emoji_ru.json), so perturbations
do not change with the installed `emoji` version; regenerate it with

    pip install emoji && python -m rueval.robustness.emoji_dictionary

Kept: fully qualified emojis without a skin-tone modifier (those repeat another emoji's words),
and of their names the content words and the digits (keycaps 0-9 and 10). Some names in the
package lost the breve of й (темныи); such a word pymorphy3 does not know is read with й back.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from rueval.robustness.perturbations import EMOJI_FILE
from rueval.text import lemma, morph, parse

_FULLY_QUALIFIED = 2  # emoji.STATUS["fully_qualified"]
_SKIN_TONES = frozenset(chr(code) for code in range(0x1F3FB, 0x1F400))
_FUNCTION_WORDS = frozenset({"PREP", "CONJ", "PRCL", "NPRO"})  # prepositions, conjunctions, particles, pronouns


def _restore_short_i(word: str) -> str:
    """The word with й where a lost breve left и, if that makes a word pymorphy3 knows."""
    analyzer = morph()
    if analyzer.word_is_known(word) or "и" not in word:
        return word
    places = [i for i, ch in enumerate(word) if ch == "и"][:4]
    for count in range(1, len(places) + 1):
        for chosen in itertools.combinations(places, count):
            candidate = "".join("й" if i in chosen else ch for i, ch in enumerate(word))
            if analyzer.word_is_known(candidate):
                return candidate
    return word


def _lemma(word: str) -> str | None:
    """The lemma a word of an emoji name stands for (as rueval.text.lemma gives it), or None for a function word."""
    if word.isdigit():
        return word
    if len(word) < 2 or not word.isalpha():
        return None
    word = _restore_short_i(word)
    return None if parse(word).tag.POS in _FUNCTION_WORDS else lemma(word)


def build() -> dict[str, Any]:
    """The dictionary from the installed `emoji` package, with where it came from."""
    import emoji
    import pymorphy3

    emoji.demojize("", language="ru")  # loads the Russian names into EMOJI_DATA
    table: dict[str, list[str]] = {}
    for symbol, data in emoji.EMOJI_DATA.items():
        name = data.get("ru")
        if not name or data["status"] != _FULLY_QUALIFIED or _SKIN_TONES.intersection(symbol):
            continue
        for word in name.strip(":").lower().replace("-", "_").split("_"):
            lemma = _lemma(word)
            if lemma and symbol not in table.setdefault(lemma, []):
                table[lemma].append(symbol)
    source = f"emoji {emoji.__version__} (Unicode CLDR Russian emoji names), pymorphy3 {pymorphy3.__version__}"
    return {"source": source, "lemmas": dict(sorted(table.items()))}


def main() -> None:
    built = build()
    entries = ",\n".join(
        f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}" for k, v in built["lemmas"].items()
    )
    text = f'{{"source": {json.dumps(built["source"])},\n"lemmas": {{\n{entries}\n}}}}\n'  # a line per lemma
    EMOJI_FILE.write_text(text, encoding="utf-8")
    print(f"{EMOJI_FILE}: {len(built['lemmas'])} lemmas from {built['source']}")


if __name__ == "__main__":
    main()
