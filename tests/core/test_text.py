import os
import random

import razdel

import rueval.core.text
from rueval.core.text import lemma, lemmas, lemmas_of, sentences, tokens, words


def test_tokens_words_and_sentences():
    assert tokens("Мама мыла раму, а папа — нет!") == ["Мама", "мыла", "раму", ",", "а", "папа", "—", "нет", "!"]
    assert words("Мама мыла раму, а папа — нет!") == ["Мама", "мыла", "раму", "а", "папа", "нет"]
    assert sentences("Пришла весна. Растаял снег!") == ["Пришла весна.", "Растаял снег!"]


# Fragments that razdel's rules join or look across: dashes, "_", floats and fractions, smileys,
# punctuation runs, yahoo!, letters of other scripts, all kinds of whitespace.
FRAGMENTS = [
    *"а Б ё x Z 5 12 . , / \\ - – — − ‑ _ ! ? … : ; ) ( « » \" ' * % № Δ σ 😀".split(),
    "мама",
    "кто",
    "то",
    "yahoo",
    "3",
    "2019",
    "...",
    ":-)",
    ";)",
    "--",
    "**",
    "т.е.",
    " ",
    " ",
    " ",
    "  ",
    "\n",
    "\t",
    "\xa0",
    "\u2009",
]


def test_tokens_equal_razdel_on_whole_texts():
    """tokens() tokenises pieces between whitespace apart; on every text it must give razdel's tokens."""
    generator = random.Random(7)
    texts = ["".join(generator.choices(FRAGMENTS, k=generator.randint(0, 14))) for _ in range(30_000)]
    texts += ["a -b", "5, 6", "5 ,6", "1 / 2", "x _ y", "конец. 5", "5 . 6", "- 5", "привет -", " - ", "мама  -то"]
    for text in texts:
        assert tokens(text) == [token.text for token in razdel.tokenize(text)], repr(text)
        assert words(text) == [t for t in tokens(text) if any(ch.isalnum() for ch in t)], repr(text)


def test_lemmas_are_lower_case_dictionary_forms_without_yo():
    assert lemmas("Коты ловили мышей") == ["кот", "ловить", "мышь"]
    assert lemma("Ёжики") == "ежик"


def test_lemmas_of_tokenises_each_distinct_text_once(monkeypatch):
    seen = []
    monkeypatch.setattr(rueval.core.text, "word_forms", lambda text: seen.append(text) or text.lower().split())
    assert lemmas_of(["Кот", "Пёс", "Кот"]) == {"Кот": ("кот",), "Пёс": ("пес",)}
    assert sorted(seen) == ["Кот", "Пёс"]


def test_each_word_form_is_parsed_once_whatever_asks(monkeypatch):
    monkeypatch.setattr(rueval.core.text, "_LEMMAS", {})
    parsed = []
    real = rueval.core.text._lemma_of_form
    monkeypatch.setattr(rueval.core.text, "_lemma_of_form", lambda form: parsed.append(form) or real(form))
    assert lemmas_of(["Коты ловили котов", "Котов нет"]) == {
        "Коты ловили котов": ("кот", "ловить", "кот"),
        "Котов нет": ("кот", "нет"),
    }
    assert lemmas("КОТЫ спят") == ["кот", "спать"] and lemma("Ловили") == "ловить"
    assert sorted(parsed) == ["котов", "коты", "ловили", "нет", "спят"]  # forms are lower-cased, then parsed once


def test_lemmas_of_much_text_in_worker_processes_equals_lemmas(monkeypatch):
    monkeypatch.setattr(rueval.core.text, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    texts = [f"Коты ловили {n} мышей" for n in range(50)] + ["Ёжики спят"]
    monkeypatch.setattr(rueval.core.text, "_LEMMAS", {})
    found = lemmas_of(texts)
    monkeypatch.setattr(rueval.core.text, "_LEMMAS", {})
    assert found == {text: tuple(lemmas(text)) for text in texts}
    assert found["Ёжики спят"] == ("ежик", "спать")
    # workers know the forms known before the fork, and the parent learns the forms they parse
    monkeypatch.setattr(rueval.core.text, "_LEMMAS", {"коты": "кошка"})
    assert lemmas_of(texts)["Коты ловили 7 мышей"] == ("кошка", "ловить", "7", "мышь")
    assert rueval.core.text._LEMMAS.keys() == {"коты", "ловили", "мышей", "ёжики", "спят", *map(str, range(50))}
    monkeypatch.setattr(rueval.core.text, "_LEMMAS", {})
    monkeypatch.setattr(rueval.core.text, "_lemma_of_form", process_id)
    found = lemmas_of(texts)
    workers = {pid for pids in found.values() for pid in pids}
    assert workers and str(os.getpid()) not in workers  # not in this process
    assert rueval.core.text._LEMMAS["мышей"] in workers  # the parent keeps the forms its workers parsed


def process_id(form: str) -> str:
    return str(os.getpid())
