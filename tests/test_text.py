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


def test_lemmas_of_lemmatises_each_distinct_text_once(monkeypatch):
    seen = []
    monkeypatch.setattr(rueval.text, "lemmas", lambda text: seen.append(text) or [text.lower()])
    assert lemmas_of(["Кот", "Пёс", "Кот"]) == {"Кот": ["кот"], "Пёс": ["пёс"]}
    assert sorted(seen) == ["Кот", "Пёс"]


def test_lemmas_of_many_texts_in_worker_processes_equal_lemmas(monkeypatch):
    monkeypatch.setattr(rueval.text, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    texts = [f"Коты ловили {n} мышей" for n in range(50)] + ["Ёжики спят"]
    found = lemmas_of(texts)
    assert found == {text: lemmas(text) for text in texts}
    assert found["Ёжики спят"] == ["ежик", "спать"]
    monkeypatch.setattr(rueval.text, "lemmas", process_id)
    assert str(os.getpid()) not in {pid for pids in lemmas_of(texts).values() for pid in pids}  # not in this process


def process_id(text: str) -> list[str]:
    return [str(os.getpid())]
