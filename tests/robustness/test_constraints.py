"""Constraints keep what the gold answer depends on, through every perturbation at full strength."""

from __future__ import annotations

import sys

import pytest

from rueval.core.errors import DataError
from rueval.data import open_data
from rueval.robustness.constraints import Jeopardy, Mentions, Multihop, NamedEntities, Referents, TargetWord
from rueval.robustness.perturbations import ButterFingers, ChangeCharCase, EdaDelete, EdaSwap, Emojify
from rueval.robustness.targets import TARGETS, protected_spans, protected_spans_batch
from rueval.tasks import TASKS, Example, Record, get_task, resolve_tasks
from rueval.tasks.offsets import word_span

# Every word that may change does change (or moves, or goes): what survives was protected. EDA swap
# swaps once in every sentence at a rate this low (max(1, p x n) = 1 swap), at 1.0 only where n is odd.
AT_FULL_STRENGTH = [ButterFingers(1.0), ChangeCharCase(1.0), EdaDelete(1.0), EdaSwap(0.001), Emojify(1.0)]
STRENGTH_IDS = [p.name for p in AT_FULL_STRENGTH]


def protected_texts(task_name: str, example: Example, field: str) -> list[str]:
    text = example.fields[field]
    return [text[s:e] for s, e in protected_spans(get_task(task_name), example)[field]]


def test_every_task_declares_perturbable_text_fields_its_data_has():
    samples = open_data(None)
    assert set(TARGETS) == set(TASKS)
    for name, target in ((task.name, TARGETS[task.name]) for task in resolve_tasks("all")):  # the samples' tasks
        split = next(s for s in ("test", "val") if samples.has_split(TASKS[name], s))
        for example in samples.load(TASKS[name], split).examples:
            assert all(isinstance(example.fields[f], str) for f in target.fields), name
        assert target.distractor is None or target.distractor in target.fields


CHEGEKA_QUESTION = (
    "ЭТОТ ГОРОД на Неве (бывший Ленинград) называют «Северной Венецией», а его основатель — X. "
    "Об этом городе этот художник писал часто, глядя на море с собакой."
)


def chegeka_example() -> Example:
    fields = {"question_id": 7, "question": CHEGEKA_QUESTION, "answer": "Санкт-Петербург"}
    return Example(7, fields, ("Санкт-Петербург",))


def test_jeopardy_protects_the_clue_x_parentheses_and_quotes():
    kept = protected_texts("chegeka", chegeka_example(), "question")
    clues = ("ЭТОТ ГОРОД", "X", "(бывший Ленинград)", "«Северной Венецией»", "этом городе", "этот художник")
    for clue in (*clues, "его основатель"):  # a pronoun and its noun, as TAPE's pattern has it
        assert clue in kept
    assert not {"Неве", "называют", "море", "собакой"} & set(" ".join(kept).split())  # ordinary words stay perturbable


def test_jeopardy_protects_a_pointing_word_with_its_adjectives_and_nouns():
    question = "Его знаменитая картина висит в Лувре, а ЭТОТ древний город стоит на реке. Она течёт быстро."
    example = Example(1, {"question_id": 1, "question": question, "answer": "Рим"}, ("Рим",))
    kept = protected_texts("chegeka", example, "question")
    assert "Его знаменитая картина" in kept and "ЭТОТ древний город" in kept
    assert "висит" not in " ".join(kept) and "Она течёт" not in kept  # a pronoun without a noun is no clue


@pytest.mark.parametrize("perturbation", AT_FULL_STRENGTH, ids=STRENGTH_IDS)
def test_jeopardy_clues_survive_every_perturbation(perturbation):
    example = chegeka_example()
    perturbed = perturbation.perturb(example, get_task("chegeka"))
    assert perturbed is not None and perturbed.fields["question"] != CHEGEKA_QUESTION
    for clue in protected_texts("chegeka", example, "question"):
        assert clue in perturbed.fields["question"]
    assert perturbed.label == ("Санкт-Петербург",) and perturbed.fields["answer"] == "Санкт-Петербург"


def test_named_entities_come_from_natasha_ner():
    text = "Лев Толстой родился в Ясной Поляне, а умер на станции Астапово."
    example = Example(0, {"text": text}, None)
    found = [text[s:e] for s, e in NamedEntities().protect(example, ["text"])["text"]]
    assert found == ["Лев Толстой", "Ясной Поляне", "Астапово"]


@pytest.mark.parametrize("perturbation", AT_FULL_STRENGTH, ids=STRENGTH_IDS)
def test_named_entities_survive_in_a_multiple_choice_question(perturbation):
    question = "Где родился Лев Толстой? (A) в Ясной Поляне (B) в Москве (C) в Казани (D) в Туле"
    example = Example(0, {"question": question, "answer": "A"}, "A")
    entities = protected_texts("ru_openbook", example, "question")
    assert {"Ясной Поляне", "Москве", "Казани", "Туле"} <= set(entities)
    perturbed = perturbation.perturb(example, get_task("ru_openbook"))
    assert perturbed is not None
    for entity in entities:
        assert entity in perturbed.fields["question"]
    assert perturbed.label == "A"


WINOGRAD = {
    "text": "Кошка поймала мышь, которая жила в старом сарае за нашим домом.",
    "options": ["Кошка", "мышь"],
    "reference": "которая",
    "homonymia_type": 1.1,
    "answer": "мышь",
    "label": 1,
}


def test_referents_protect_anaphor_antecedents_and_their_verbs():
    example = Example(0, WINOGRAD, 1)
    assert set(protected_texts("winograd", example, "text")) == {"Кошка", "мышь", "которая", "поймала", "жила"}


@pytest.mark.parametrize("perturbation", AT_FULL_STRENGTH, ids=STRENGTH_IDS)
def test_referents_survive_every_perturbation(perturbation):
    example = Example(0, WINOGRAD, 1)
    perturbed = perturbation.perturb(example, get_task("winograd"))
    assert perturbed is not None
    for word in ("Кошка", "мышь", "которая", "поймала", "жила"):
        assert word in perturbed.fields["text"]
    assert {**perturbed.fields, "text": ""} == {**WINOGRAD, "text": ""}


def test_referents_find_an_option_given_in_another_case_by_its_lemmas():
    text = "Ветер раскачал фонарь у высокой башни, которая давно покосилась."
    fields = {**WINOGRAD, "text": text, "options": ["Ветер", "высокая башня"], "reference": "которая"}
    kept = protected_texts("winograd", Example(0, fields, 1), "text")
    assert {"высокой", "башни", "Ветер", "которая"} <= set(kept)
    assert "фонарь" not in kept  # neither an antecedent nor the anaphor


RWSD_TEXT = "Вчера кошка не смогла поймать мышь, потому что она была слишком проворной и быстрой."


def rwsd_example() -> Example:
    target = {"span1_text": "мышь", "span1_index": 5, "span2_text": "она была", "span2_index": 8}
    assert RWSD_TEXT.split()[5].startswith("мышь") and RWSD_TEXT.split()[8] == "она"
    return Example(0, {"idx": 0, "text": RWSD_TEXT, "target": target, "label": True}, True)


@pytest.mark.parametrize("perturbation", AT_FULL_STRENGTH, ids=STRENGTH_IDS)
def test_rwsd_word_indices_follow_their_spans(perturbation):
    perturbed = perturbation.perturb(rwsd_example(), get_task("rwsd"))
    assert perturbed is not None
    words, target = perturbed.fields["text"].split(), perturbed.fields["target"]
    for key in ("span1", "span2"):
        index, span = target[f"{key}_index"], target[f"{key}_text"]
        assert " ".join(words[index:]).startswith(span)


def multiq_record() -> dict:
    support = "Андрей Петрович Сомов (род. 1961, Вологда) — российский художник-пейзажист и график."
    main = (
        "Вологда — город на севере России, административный центр Вологодской области. "
        "Город стоит на реке Вологде, в ста километрах от Рыбинского водохранилища. "
        "Впервые Вологда упоминается в летописи под 1147 годом."
    )
    return {
        "support_text": support,
        "main_text": main,
        "question": "На какой реке стоит город, где родился Андрей Сомов?",
        "bridge_answers": [{"label": "passage", "offset": support.index("Вологда"), "length": 7, "segment": "Вологда"}],
        "main_answers": [{"label": "passage", "offset": main.index("Вологде"), "length": 7, "segment": "Вологде"}],
    }


def multiq_example() -> Example:
    task = get_task("multiq")
    return task.parse(Record(multiq_record(), "multiq.jsonl", 1, 0))[0]


def test_multihop_protects_every_mention_of_the_bridge_and_main_answers():
    example = multiq_example()
    main = protected_texts("multiq", example, "main_text")
    assert main.count("Вологда") == 2 and "Вологде" in main  # all mentions, wherever they are
    assert "Вологда" in protected_texts("multiq", example, "support_text")


@pytest.mark.parametrize("perturbation", AT_FULL_STRENGTH, ids=STRENGTH_IDS)
def test_multihop_offsets_still_point_at_the_answers(perturbation):
    example = multiq_example()
    perturbed = perturbation.perturb(example, get_task("multiq"))
    assert perturbed is not None and perturbed.fields["main_text"] != example.fields["main_text"]
    for answers, text_field in (("bridge_answers", "support_text"), ("main_answers", "main_text")):
        for answer in perturbed.fields[answers]:
            text = perturbed.fields[text_field]
            assert text[answer["offset"] : answer["offset"] + answer["length"]] == answer["segment"]
    assert perturbed.label == example.label == ("Вологде",)
    assert example.fields["main_answers"] == multiq_record()["main_answers"]  # the original is not touched


def test_multihop_offsets_move_when_text_before_the_answer_changes():
    example = multiq_example()
    perturbed = EdaDelete(1.0).perturb(example, get_task("multiq"))
    old, new = example.fields["main_answers"][0]["offset"], perturbed.fields["main_answers"][0]["offset"]
    assert new < old  # words before the answer were deleted


@pytest.mark.parametrize("perturbation", AT_FULL_STRENGTH, ids=STRENGTH_IDS)
def test_target_word_offsets_follow_the_word(perturbation):
    sentence1 = "Дедушка всю жизнь собирал почтовые марки и старые монеты."
    sentence2 = "Эта марка автомобилей очень популярна в Японии."
    fields = {"idx": 0, "word": "марка", "sentence1": sentence1, "sentence2": sentence2, "label": False}
    fields |= {"start1": sentence1.index("марки"), "end1": sentence1.index("марки") + 5, "start2": 4, "end2": 9}
    perturbed = perturbation.perturb(Example(0, fields, False), get_task("russe"))
    assert perturbed is not None
    assert perturbed.fields["sentence1"][perturbed.fields["start1"] : perturbed.fields["end1"]] == "марки"
    assert perturbed.fields["sentence2"][perturbed.fields["start2"] : perturbed.fields["end2"]] == "марка"


# The official RUSSE files' conventions: end one past the word (over punctuation, or beyond the
# sentence's end), one short of it; rueval's samples end at it (rueval.tasks.offsets).
OFFSET_CONVENTIONS = {
    "at the word": (9, 14),
    "one past, over a comma": (9, 15),
    "one short": (9, 13),
    "one past the sentence's end": (46, 52),
}


@pytest.mark.parametrize("perturbation", AT_FULL_STRENGTH, ids=STRENGTH_IDS)
@pytest.mark.parametrize("convention", OFFSET_CONVENTIONS, ids=str)
def test_target_word_offsets_are_read_and_kept_in_the_records_own_convention(perturbation, convention):
    sentence = "Дедушка, марки, монеты и конверты лежат в его ящике"
    start, end = OFFSET_CONVENTIONS[convention]
    word = word_span(sentence, start, end)
    assert word is not None
    fields = {"idx": 0, "word": "марка", "sentence1": sentence, "sentence2": "Эта марка редкая.", "label": False}
    fields |= {"start1": start, "end1": end, "start2": 4, "end2": 9}
    perturbed = perturbation.perturb(Example(0, fields, False), get_task("russe"))
    assert perturbed is not None
    new = word_span(perturbed.fields["sentence1"], perturbed.fields["start1"], perturbed.fields["end1"])
    assert new is not None and perturbed.fields["sentence1"][new[0] : new[1]] == sentence[word[0] : word[1]]
    assert (perturbed.fields["start1"] - new[0], perturbed.fields["end1"] - new[1]) == (start - word[0], end - word[1])


def test_mentions_keep_every_rucos_candidate_in_the_passage():
    passage = "Компания Газпром объявила, что Москва получит новый газопровод. Газпром начнёт стройку весной."
    fields = {"passage": passage, "query": "@placeholder начнёт стройку"}
    example = Example((0, 0), fields, ("Газпром",), ("Газпром", "Москва", "Газпром"))
    assert sorted(Mentions().protect(example, ["passage"])["passage"]) == [(9, 16), (31, 37), (64, 71)]
    for perturbation in AT_FULL_STRENGTH:
        perturbed = perturbation.perturb(example, get_task("rucos"))
        assert perturbed.fields["passage"].count("Газпром") == 2 and "Москва" in perturbed.fields["passage"]
        assert perturbed.candidates == example.candidates and perturbed.label == ("Газпром",)


def test_constraints_are_declared_where_tape_uses_them():
    assert any(isinstance(c, Jeopardy) for c in TARGETS["chegeka"].constraints)
    assert any(isinstance(c, Referents) for c in TARGETS["winograd"].constraints)
    assert any(isinstance(c, Multihop) for c in TARGETS["multiq"].constraints)
    assert any(isinstance(c, NamedEntities) for c in TARGETS["ru_openbook"].constraints)
    assert any(isinstance(c, TargetWord) for c in TARGETS["russe"].constraints)


RUSSE = {"idx": 0, "word": "марка", "sentence1": "Марка стоит дорого.", "sentence2": "Эта марка редкая.", "label": True}


@pytest.mark.parametrize(
    ("task_name", "fields", "field", "message"),
    [
        ("multiq", {"bridge_answers": [5]}, "bridge_answers[0]", "expected an object with segment and offset"),
        ("multiq", {"bridge_answers": "Вологда"}, "bridge_answers", "expected a list of answers"),
        ("multiq", {"main_answers": [{"offset": "x", "segment": "Вологде"}]}, "main_answers[0].offset", "offset"),
        ("multiq", {"main_answers": [{"offset": 3, "segment": ""}]}, "main_answers[0].segment", "answer's text"),
        ("multiq", {"main_text": None}, "main_text", "expected text to perturb, got NoneType"),
        ("winograd", {**WINOGRAD, "options": "Кошка"}, "options", "expected a list of strings"),
        ("winograd", {**WINOGRAD, "text": 5}, "text", "expected text to perturb, got int 5"),
        ("rwsd", {"text": RWSD_TEXT, "target": ["мышь"]}, "target", "expected an object"),
        ("russe", {**RUSSE, "start1": 0, "end1": 50}, "start1", "not a word's offsets in sentence1"),
        ("russe", {**RUSSE, "start2": 4}, "start2", "not a word's offsets in sentence2"),
    ],
)
def test_malformed_annotations_are_a_data_error_naming_file_example_and_field(task_name, fields, field, message):
    """A constraint that could not read its annotations would protect nothing: refused up front."""
    base = multiq_record() if task_name == "multiq" else {}
    example = Example(7, {**base, **fields}, ("Вологде",))
    with pytest.raises(DataError, match=message) as raised:
        protected_spans_batch(get_task(task_name), [example], "data/test.jsonl")
    assert raised.value.file == "data/test.jsonl" and raised.value.field == field
    assert f"{task_name} example with idx 7" in str(raised.value)


def test_a_missing_natasha_is_one_error_naming_the_extra_to_install(monkeypatch):
    """natasha is the optional `robustness` extra: without it the constraints say how to get it."""
    from rueval.core.errors import RuevalError
    from rueval.robustness import constraints

    monkeypatch.setitem(sys.modules, "natasha", None)  # `import natasha` now raises ImportError
    constraints._natasha.cache_clear()
    example = Example(0, {"text": "Лев Толстой родился в Ясной Поляне."}, None)
    with pytest.raises(RuevalError, match=r"pip install 'rueval\[robustness\]'"):
        NamedEntities().protect(example, ["text"])
    with pytest.raises(RuevalError, match="natasha"):
        constraints._dependencies(["Кошка спит."])
    constraints._natasha.cache_clear()
