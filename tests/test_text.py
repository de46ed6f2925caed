from rueval.text import lemma, lemmas, sentences, tokens, words


def test_tokens_words_and_sentences():
    assert tokens("Мама мыла раму, а папа — нет!") == ["Мама", "мыла", "раму", ",", "а", "папа", "—", "нет", "!"]
    assert words("Мама мыла раму, а папа — нет!") == ["Мама", "мыла", "раму", "а", "папа", "нет"]
    assert sentences("Пришла весна. Растаял снег!") == ["Пришла весна.", "Растаял снег!"]


def test_lemmas_are_lower_case_dictionary_forms_without_yo():
    assert lemmas("Коты ловили мышей") == ["кот", "ловить", "мышь"]
    assert lemma("Ёжики") == "ежик"
