import os

import rueval.text
from rueval.text import lemma, lemmas, lemmas_of, sentences, tokens, words


def test_tokens_words_and_sentences():
    assert tokens("Мама мыла раму, а папа — нет!") == ["Мама", "мыла", "раму", ",", "а", "папа", "—", "нет", "!"]
    assert words("Мама мыла раму, а папа — нет!") == ["Мама", "мыла", "раму", "а", "папа", "нет"]
    assert sentences("Пришла весна. Растаял снег!") == ["Пришла весна.", "Растаял снег!"]


def test_lemmas_are_lower_case_dictionary_forms_without_yo():
    assert lemmas("Коты ловили мышей") == ["кот", "ловить", "мышь"]
    assert lemma("Ёжики") == "ежик"


def test_lemmas_of_tokenises_each_distinct_text_once(monkeypatch):
    seen = []
    monkeypatch.setattr(rueval.text, "words", lambda text: seen.append(text) or text.split())
    assert lemmas_of(["Кот", "Пёс", "Кот"]) == {"Кот": ["кот"], "Пёс": ["пес"]}
    assert sorted(seen) == ["Кот", "Пёс"]


def test_each_word_form_is_parsed_once_whatever_asks(monkeypatch):
    monkeypatch.setattr(rueval.text, "_LEMMAS", {})
    parsed = []
    real = rueval.text._lemma_of_form
    monkeypatch.setattr(rueval.text, "_lemma_of_form", lambda form: parsed.append(form) or real(form))
    assert lemmas_of(["Коты ловили котов", "Котов нет"]) == {
        "Коты ловили котов": ["кот", "ловить", "кот"],
        "Котов нет": ["кот", "нет"],
    }
    assert lemmas("КОТЫ спят") == ["кот", "спать"] and lemma("Ловили") == "ловить"
    assert sorted(parsed) == ["котов", "коты", "ловили", "нет", "спят"]  # forms are lower-cased, then parsed once


def test_lemmas_of_many_new_word_forms_in_worker_processes_equal_lemmas(monkeypatch):
    monkeypatch.setattr(rueval.text, "PARALLEL_MIN_FORMS", 0)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    texts = [f"Коты ловили {n} мышей" for n in range(50)] + ["Ёжики спят"]
    monkeypatch.setattr(rueval.text, "_LEMMAS", {})
    found = lemmas_of(texts)
    monkeypatch.setattr(rueval.text, "_LEMMAS", {})
    assert found == {text: lemmas(text) for text in texts}
    assert found["Ёжики спят"] == ["ежик", "спать"]
    monkeypatch.setattr(rueval.text, "_LEMMAS", {})
    monkeypatch.setattr(rueval.text, "_lemma_of_form", process_id)
    assert str(os.getpid()) not in {pid for pids in lemmas_of(texts).values() for pid in pids}  # not in this process


def process_id(form: str) -> str:
    return str(os.getpid())
