"""Emojify's dictionary, Russian lemma -> emojis, built from Unicode CLDR's Russian emoji names and
keywords, each word reduced to its pymorphy3 lemma (as Emojify looks words up):

- the names the `emoji` package ships (emoji.EMOJI_DATA, language "ru": CLDR's short names), and
- CLDR's Russian annotations, keywords and names, including the derived ones (flags, keycaps,
  sequences), from Unicode's own CLDR JSON packages, cldr-annotations-full and
  cldr-annotations-derived-full, which the npm registry serves (no package on the Python index
  ships the annotations; Debian's unicode-cldr-core has an older CLDR, 41, whose keywords cover
  fewer of TAPE's words).

TAPE's own dictionary (RussianNLP/rutransform, emoji_dict_ru.json) maps 1,673 Russian words;
benchmarks/rutransform_rates.py measures how many of them this one maps (the docs give the figure
and what CLDR lacks). The dictionary is generated once and committed beside this module
(emoji_ru.json), so perturbations do not change with the installed sources; regenerate it with

    pip install 'rueval[emoji]' && npm install cldr-annotations-full cldr-annotations-derived-full
    python -m rueval.robustness.emoji_dictionary [--cldr-json node_modules]

Kept: fully qualified emojis without a skin-tone modifier (those repeat another emoji's words), and
of their names and keywords the content words (hyphenated ones whole), and numbers only from the
names (keycaps 0-9 and 10: CLDR's keywords would add clock faces and blood types). Some names in
the `emoji` package lost the breve of й (темныи); such a word pymorphy3 does not know is read with
й back.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rueval.core.text import lemma, morph, parse
from rueval.robustness.perturbations import EMOJI_FILE

# the CLDR JSON packages' Russian annotations: (package, file, its top-level key)
ANNOTATIONS = (
    ("cldr-annotations-full", "annotations/ru/annotations.json", "annotations"),
    ("cldr-annotations-derived-full", "annotationsDerived/ru/annotations.json", "annotationsDerived"),
)
_FULLY_QUALIFIED = 2  # emoji.STATUS["fully_qualified"]
_SKIN_TONES = frozenset(chr(code) for code in range(0x1F3FB, 0x1F400))
_FUNCTION_WORDS = frozenset({"PREP", "CONJ", "PRCL", "NPRO"})  # prepositions, conjunctions, particles, pronouns
_WORD = re.compile(r"\w+(?:-\w+)*")


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
    """The lemma a word of an emoji name stands for (as core.text.lemma gives it), or None for a function word."""
    if word.isdigit():
        return word
    if len(word) < 2 or not word.replace("-", "").isalpha():
        return None
    word = _restore_short_i(word)
    return None if parse(word).tag.POS in _FUNCTION_WORDS else lemma(word)


def _emojis() -> dict[str, str]:
    """Fully qualified emojis without a skin tone, by their code points without variation selectors
    (as CLDR writes them)."""
    import emoji

    return {
        symbol.replace("\ufe0f", ""): symbol
        for symbol, data in emoji.EMOJI_DATA.items()
        if data["status"] == _FULLY_QUALIFIED and not _SKIN_TONES.intersection(symbol)
    }


def _names() -> Iterator[tuple[str, str]]:
    """(emoji, its Russian name) from the `emoji` package."""
    import emoji

    emoji.demojize("", language="ru")  # loads the Russian names into EMOJI_DATA
    for symbol, data in emoji.EMOJI_DATA.items():
        if data.get("ru"):
            yield symbol, data["ru"].strip(":").replace("_", " ")


def _annotations(packages: Path) -> Iterator[tuple[str, str]]:
    """(code points, a keyword or name) from CLDR's Russian annotations in the CLDR JSON packages."""
    for package, file, key in ANNOTATIONS:
        annotations = json.loads((packages / package / file).read_text(encoding="utf-8"))[key]["annotations"]
        for points, phrases in annotations.items():
            for phrase in [*phrases.get("default", []), *phrases.get("tts", [])]:
                yield points, phrase


def _version(packages: Path) -> str:
    return json.loads((packages / ANNOTATIONS[0][0] / "package.json").read_text(encoding="utf-8"))["version"]


def build(packages: Path) -> dict[str, Any]:
    """The dictionary from the installed `emoji` package and the CLDR JSON packages in ``packages``
    (a node_modules folder), with where it came from."""
    import emoji
    import pymorphy3

    emojis = _emojis()
    table: dict[str, list[str]] = {}  # lemma -> its emojis
    named = ((points, phrase, True) for points, phrase in _names())
    annotated = ((points, phrase, False) for points, phrase in _annotations(packages))
    for points, phrase, numbers in itertools.chain(named, annotated):
        symbol = emojis.get(points.replace("\ufe0f", ""))
        if symbol is None:  # a symbol that is not an emoji (CLDR names punctuation too), or a skin tone
            continue
        for word in _WORD.findall(phrase.lower()):
            found = _lemma(word) if numbers or not word.isdigit() else None  # a number's emojis: its keycaps
            if found and symbol not in table.setdefault(found, []):
                table[found].append(symbol)
    source = (
        f"emoji {emoji.__version__} (Unicode CLDR Russian emoji names), CLDR JSON {_version(packages)} "
        f"Russian annotations, pymorphy3 {pymorphy3.__version__}"
    )
    return {"source": source, "lemmas": dict(sorted(table.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description="Regenerate Emojify's dictionary (emoji_ru.json).")
    parser.add_argument(
        "--cldr-json", type=Path, default=Path("node_modules"), help="where npm installed the CLDR JSON packages"
    )
    built = build(parser.parse_args().cldr_json)
    entries = ",\n".join(
        f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}" for k, v in built["lemmas"].items()
    )
    text = f'{{"source": {json.dumps(built["source"])},\n"lemmas": {{\n{entries}\n}}}}\n'  # a line per lemma
    EMOJI_FILE.write_text(text, encoding="utf-8")
    print(f"{EMOJI_FILE}: {len(built['lemmas'])} lemmas from {built['source']}")


if __name__ == "__main__":
    main()
