import json
import re

import pytest
from support import write_jsonl

from rueval.core.errors import RuevalError
from rueval.solvers import make_solver
from rueval.solvers.heuristics import (
    NO_RULE,
    RULES,
    HeuristicSolver,
    Rule,
    RuleCoverage,
    coverage,
    first_prediction,
    select_rules,
)
from rueval.solvers.trivial import TrivialSolver
from rueval.tasks import TASKS, Example, get_task, resolve_tasks

LONG_PREMISE = " ".join(["Учёные долго наблюдали за птицами в северном лесу."] * 5)  # 40 words
LONG_PASSAGE = " ".join(["Лось — крупное парнокопытное животное, которое живёт в лесах Евразии."] * 11)  # 99 words
RUCOS_PASSAGE = (
    "Путин встретился с Макроном в Москве. Макрон и Путин обсудили ситуацию. Москва готовится к визиту, сказал Макрон."
)
RUCOS_MENTIONS = ("Путин", "Макроном", "Москве", "Макрон", "Путин", "Москва", "Макрон")
MUSERC_PASSAGE = (
    "Мальчик Тимур пошёл в шахматный кружок. Сначала Тимур проигрывал всем, но потом стал чемпионом города."
)
TERRA_PREMISE = "Компания Яндекс открыла новый офис в Казани в прошлом году."

# (task, rule, fields where it fires, its prediction there, a wrong gold label, fields where it does not fire)
BRANCHES = [
    (
        "lidirus",
        "same_lemmas",
        {"sentence1": "Кошка спит на диване.", "sentence2": "На диване спит кошка."},
        "entailment",
        "not_entailment",
        {"sentence1": "Кошка спит на диване.", "sentence2": "На диване спит собака."},
    ),
    (
        "lidirus",
        "entailment_word_in_both",
        {"sentence1": "Вчера он пришёл домой рано.", "sentence2": "Вчера он пришёл домой поздно."},
        "entailment",
        "not_entailment",
        {"sentence1": "Он пришёл домой рано.", "sentence2": "Он пришёл домой поздно."},  # 'Он', not 'он'
    ),
    (
        "lidirus",
        "many_unshared_tokens",
        {
            "sentence1": "Вчера вечером в маленьком городе на севере страны прошёл сильный дождь с градом.",
            "sentence2": "Шёл дождь.",
        },
        "not_entailment",
        "entailment",
        {"sentence1": "Кошка спит.", "sentence2": "Кошка спала."},
    ),
    (
        "lidirus",
        "unshared_commas",
        {"sentence1": "Маша, которая живёт рядом, купила хлеб.", "sentence2": "Маша купила хлеб."},
        "not_entailment",
        "entailment",
        {"sentence1": "Маша купила хлеб, молоко.", "sentence2": "Маша купила хлеб."},
    ),
    (
        "lidirus",
        "two_unshared_words",
        {"sentence1": "Кошка спит.", "sentence2": "Кошка спала."},
        "not_entailment",
        "entailment",
        {"sentence1": "Кошка спит.", "sentence2": "Кошка крепко спит."},
    ),
    (
        "lidirus",
        "word_in_one_sentence",
        {"sentence1": "Петя не любит кашу.", "sentence2": "Петя любит кашу."},
        "not_entailment",
        "entailment",
        {"sentence1": "Петя любит кашу.", "sentence2": "Петя ест кашу."},
    ),
    (
        "rcb",
        "hypothesis_in_premise",
        {"premise": "Оказалось, что ключи лежали в сахарнице.", "hypothesis": "Ключи лежали в сахарнице."},
        "entailment",
        "neutral",
        {"premise": "Оказалось, что ключи лежали в сахарнице.", "hypothesis": "Ключи лежали в шкафу."},
    ),
    (
        "rcb",
        "shared_vocabulary",
        {"premise": "Мама сказала, что завтра будет дождь.", "hypothesis": "Завтра будет сильный дождь."},
        "entailment",
        "contradiction",
        {"premise": "Мама сказала, что завтра будет дождь.", "hypothesis": "Послезавтра будет солнечно."},
    ),
    (
        "rcb",
        "admit_verb",
        {"premise": "Министр признал, что реформа провалилась.", "hypothesis": "Реформа провалилась."},
        "entailment",
        "neutral",
        {"premise": "Министр сказал, что реформа провалилась.", "hypothesis": "Реформа провалилась."},
    ),
    (
        "rcb",
        "opinion_verb",
        {"premise": "Я думаю, что он опоздает.", "hypothesis": "Он опоздает."},
        "neutral",
        "entailment",
        {"premise": "Я знаю, что он опоздает.", "hypothesis": "Он опоздает."},
    ),
    (
        "rcb",
        "short_hypothesis",
        {"premise": "Я знаю, что он опоздает.", "hypothesis": "Он опоздает."},
        "contradiction",
        "neutral",
        {"premise": "Я знаю, что он опоздает.", "hypothesis": "Он опоздает на поезд сегодня."},
    ),
    (
        "rcb",
        "mid_length_hypothesis",
        {"premise": "Я знаю, что он опоздает.", "hypothesis": "Он опоздает на поезд сегодня."},
        "neutral",
        "entailment",
        {"premise": "Я знаю, что он опоздает.", "hypothesis": "Он, как обычно, опоздает на утренний поезд до Твери."},
    ),
    (
        "rcb",
        "long_premise",
        {"premise": LONG_PREMISE, "hypothesis": "Птицы улетели."},
        "entailment",
        "neutral",
        {"premise": "Я знаю, что он опоздает.", "hypothesis": "Птицы улетели."},
    ),
    (
        "parus",
        "more_shared_lemmas",
        {"premise": "Лёд на катке начал таять.", "choice1": "Ударил мороз.", "choice2": "Лёд растаял от тепла."},
        1,
        0,
        {"premise": "Лёд на катке начал таять.", "choice1": "Ударил мороз.", "choice2": "Наступила оттепель."},
    ),
    (
        "parus",
        "more_words",
        {
            "premise": "Лёд на катке начал таять.",
            "choice1": "Ударил мороз.",
            "choice2": "Наступила долгая тёплая оттепель.",
        },
        1,
        0,
        {"premise": "Лёд на катке начал таять.", "choice1": "Ударил мороз.", "choice2": "Наступила оттепель."},
    ),
    (
        "muserc",
        "all_answer_lemmas_in_text",
        {"passage": MUSERC_PASSAGE, "answer": "Тимур стал чемпионом."},
        1,
        0,
        {"passage": MUSERC_PASSAGE, "answer": "Тимур стал врачом."},
    ),
    (
        "muserc",
        "long_answer",
        {
            "passage": MUSERC_PASSAGE,
            "answer": "Он долго тренировался каждый день после школы и в итоге выиграл турнир.",
        },
        1,
        0,
        {"passage": MUSERC_PASSAGE, "answer": "Тимур стал врачом."},
    ),
    (
        "muserc",
        "many_shared_lemmas",
        {"passage": MUSERC_PASSAGE, "answer": "Мальчик Тимур пошёл в кружок и стал чемпионом города."},
        1,
        0,
        {"passage": MUSERC_PASSAGE, "answer": "Тимур стал врачом."},
    ),
    (
        "muserc",
        "no_shared_lemmas",
        {"passage": MUSERC_PASSAGE, "answer": "Лётчиком."},
        0,
        1,
        {"passage": MUSERC_PASSAGE, "answer": "Тимуром."},
    ),
    (
        "muserc",
        "short_answer",
        {"passage": MUSERC_PASSAGE, "answer": "Тимур."},
        0,
        1,
        {"passage": MUSERC_PASSAGE, "answer": "Тимур стал чемпионом города."},
    ),
    (
        "muserc",
        "one_shared_lemma",
        {"passage": MUSERC_PASSAGE, "answer": "Тимур уехал."},
        0,
        1,
        {"passage": MUSERC_PASSAGE, "answer": "Тимур стал врачом."},
    ),
    (
        "terra",
        "hypothesis_in_premise",
        {"premise": TERRA_PREMISE, "hypothesis": "новый офис в Казани"},
        "entailment",
        "not_entailment",
        {"premise": TERRA_PREMISE, "hypothesis": "Офис в Казани закрыт."},
    ),
    (
        "terra",
        "low_overlap",
        {"premise": TERRA_PREMISE, "hypothesis": "Погода в Москве была солнечной."},
        "not_entailment",
        "entailment",
        {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл офис."},
    ),
    (
        "terra",
        "three_quarters_overlap",
        {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл офис вчера."},
        "entailment",
        "not_entailment",
        {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл офис."},
    ),
    (
        "terra",
        "two_thirds_overlap",
        {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл магазин."},
        "entailment",
        "not_entailment",
        {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл офис вчера."},
    ),
    (
        "terra",
        "full_overlap",
        {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл офис."},
        "entailment",
        "not_entailment",
        {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл магазин."},
    ),
    (
        "terra",
        "short_premise",
        {"premise": TERRA_PREMISE, "hypothesis": "Офис открыт."},
        "not_entailment",
        "entailment",
        {"premise": LONG_PREMISE, "hypothesis": "Офис открыт."},
    ),
    (
        "terra",
        "long_premise",
        {"premise": LONG_PREMISE, "hypothesis": "Птицы улетели."},
        "entailment",
        "not_entailment",
        {"premise": TERRA_PREMISE, "hypothesis": "Птицы улетели."},
    ),
    (
        "terra",
        "marker_word",
        {"premise": TERRA_PREMISE, "hypothesis": "В офисе работают только мужчины."},
        "not_entailment",
        "entailment",
        {"premise": TERRA_PREMISE, "hypothesis": "В офисе работают женщины."},
    ),
    (
        "russe",
        "same_form",
        {"word": "марка", "sentence1": "Дедушка собирал почтовые марки.", "sentence2": "Эти марки лежали в альбоме."},
        False,
        True,
        {"word": "марка", "sentence1": "Дедушка собирал почтовые марки.", "sentence2": "Эта марка очень популярна."},
    ),
    (
        "russe",
        "token_overlap",
        {
            "word": "марка",
            "sentence1": "Дедушка собирал почтовые марки.",
            "sentence2": "Дедушка продал почтовые марки.",
        },
        True,
        False,
        {"word": "марка", "sentence1": "Дедушка собирал марки.", "sentence2": "Эта марка очень популярна."},
    ),
    (
        "russe",
        "length_gap",
        {
            "word": "марка",
            "sentence1": "Марки собраны.",
            "sentence2": "Эта марка автомобилей особенно популярна в Японии и соседних с ней странах.",
        },
        False,
        True,
        {"word": "марка", "sentence1": "Марки собраны.", "sentence2": "Марка популярна."},
    ),
    (
        "danetqa",
        "mentions_was",
        {"question": "Были ли у Пушкина дети?", "passage": "У Пушкина было четверо детей."},
        True,
        False,
        {"question": "Является ли Пушкин поэтом?", "passage": "Пушкин — поэт."},
    ),
    (
        "danetqa",
        "starts_with_is",
        {"question": "Есть ли жизнь на Марсе?", "passage": "Марс — планета."},
        True,
        False,
        {"question": "Является ли Марс планетой?", "passage": "Марс — планета."},
    ),
    (
        "danetqa",
        "starts_with_belongs",
        {"question": "Входит ли Крит в состав Греции?", "passage": "Крит — остров."},
        False,
        True,
        {"question": "Входят ли Курилы в состав России?", "passage": "Курилы — острова."},
    ),
    (
        "danetqa",
        "mentions_eat",
        {"question": "Едят ли кошки траву?", "passage": "Кошки иногда едят траву."},
        False,
        True,
        {"question": "Кормят ли кошек травой?", "passage": "Кошки иногда едят траву."},
    ),
    (
        "danetqa",
        "mentions_is_it_true",
        {"question": "Правда ли, что киты — рыбы?", "passage": "Киты — звери."},
        False,
        True,
        {"question": "Киты — рыбы?", "passage": "Киты — звери."},
    ),
    (
        "danetqa",
        "long_question",
        {"question": "Является ли лось самым крупным представителем семейства оленевых?", "passage": "Лось — олень."},
        False,
        True,
        {"question": "Лось — олень?", "passage": "Лось — олень."},
    ),
    (
        "danetqa",
        "long_passage",
        {"question": "Лось — олень?", "passage": LONG_PASSAGE},
        False,
        True,
        {"question": "Лось — олень?", "passage": "Лось — олень."},
    ),
    (
        "rucos",
        "frequent_entity_not_in_query",
        {"passage": RUCOS_PASSAGE, "query": "@placeholder прилетел в Москву по приглашению Путина."},
        "Макрон",
        ("Путин",),
        {"passage": RUCOS_PASSAGE, "query": "@placeholder пригласил Макрона в Москву."},
    ),
    (
        "rucos",
        "entity_not_in_query",
        {"passage": RUCOS_PASSAGE, "query": "@placeholder пригласил Макрона в Москву."},
        "Путин",
        ("Москва",),
        {"passage": RUCOS_PASSAGE, "query": "Путин пригласил @placeholder Макрона в Москву."},
    ),
]


def example(task, fields, label=None, idx=0):
    candidates = RUCOS_MENTIONS if task == "rucos" else ()
    return Example(idx=idx, fields=fields, label=label, candidates=candidates)


def find_rule(task, name):
    return next(rule for rule in RULES[task] if rule.name == name)


@pytest.mark.parametrize(
    ("task", "name", "fires", "prediction", "wrong", "quiet"), BRANCHES, ids=[f"{b[0]}-{b[1]}" for b in BRANCHES]
)
def test_every_rule_fires_right_fires_wrong_and_stays_quiet(task, name, fires, prediction, wrong, quiet):
    rule = find_rule(task, name)
    assert rule.apply(example(task, fires)) == prediction
    assert rule.apply(example(task, quiet)) is None
    right_gold = (prediction,) if task == "rucos" else prediction
    measured = [example(task, fires, right_gold, 0), example(task, fires, wrong, 1), example(task, quiet, wrong, 2)]
    row = next(row for row in coverage(task, measured) if row.name == name)
    assert (row.covered, row.correct) == (2, 1)


def test_every_declared_rule_has_a_tested_branch_and_a_paper_description():
    tested = {(task, name) for task, name, *_ in BRANCHES}
    declared = {(task, rule.name) for task, rules in RULES.items() for rule in rules}
    assert tested == declared
    assert all(rule.description and rule.name.isidentifier() for rules in RULES.values() for rule in rules)
    assert "rwsd" not in RULES and not any(TASKS[name].benchmark == "tape" for name in RULES)


def test_rules_predict_the_task_labels_they_declare():
    for task, rules in RULES.items():
        for rule in rules:
            assert rule.target is None or rule.target in get_task(task).labels, (task, rule.name)


def test_russe_reads_the_target_form_from_the_given_spans():
    fields = {
        "word": "марка",
        "sentence1": "Марки и марка.",
        "sentence2": "Эта марка популярна.",
        "start1": 8,
        "end1": 13,
        "start2": 4,
        "end2": 9,
    }
    assert find_rule("russe", "same_form").apply(example("russe", fields)) is False
    fields["start1"], fields["end1"] = 0, 5  # now "Марки" against "марка"
    assert find_rule("russe", "same_form").apply(example("russe", fields)) is None


def test_terra_overlap_rules_are_exact_ratios_of_distinct_lemmas():
    # premise lemmas: компания яндекс открыть новый офис в казань прошлый год
    def rules_firing(hypothesis):
        pair = example("terra", {"premise": TERRA_PREMISE, "hypothesis": hypothesis})
        return [rule.name for rule in RULES["terra"] if rule.apply(pair) is not None and "overlap" in rule.name]

    assert rules_firing("Яндекс открыл офис вчера.") == ["three_quarters_overlap"]  # 3/4
    assert rules_firing("Яндекс открыл новый офис вчера.") == []  # 4/5: above 3/4 but not equal to it
    assert rules_firing("Яндекс открыл магазин.") == ["two_thirds_overlap"]  # 2/3
    assert rules_firing("Яндекс открыл новый офис в Казани в прошлом месяце, сообщил директор.") == []  # 7/10
    assert rules_firing("Яндекс, Яндекс открыл магазин.") == ["two_thirds_overlap"]  # distinct lemmas: still 2/3
    assert rules_firing("Погода была солнечной в Москве, Питере и Казани.") == ["low_overlap"]  # 2/8


def test_terra_lemmas_are_letter_runs_that_break_at_yo():
    # 'всё' is read as 'вс' in both texts, so it is shared; digits are no word at all, so '13' is not unshared.
    premise = "Всё прошло по плану 12 мая, сообщила пресс-служба."
    pair = example("terra", {"premise": premise, "hypothesis": "Всё прошло 13 мая."})
    assert find_rule("terra", "full_overlap").apply(pair) == "entailment"


def test_terra_runs_its_rules_in_the_authors_order():
    # Full overlap (entailment) but a premise under 29 words (not_entailment): the short premise comes first.
    pair = example("terra", {"premise": TERRA_PREMISE, "hypothesis": "Яндекс открыл офис."})
    assert find_rule("terra", "full_overlap").apply(pair) == "entailment"
    assert first_prediction(RULES["terra"], pair) == "not_entailment"
    names = rule_names(RULES["terra"])
    assert names.index("marker_word") < names.index("three_quarters_overlap") < names.index("long_premise")


def test_terra_substring_is_plain_text_not_whole_words():
    in_a_word = example("terra", {"premise": TERRA_PREMISE, "hypothesis": "ндекс открыла"})
    assert find_rule("terra", "hypothesis_in_premise").apply(in_a_word) == "entailment"
    with_full_stop = example("terra", {"premise": TERRA_PREMISE, "hypothesis": "Новый офис в Казани."})
    assert find_rule("terra", "hypothesis_in_premise").apply(with_full_stop) is None  # 'Казани в' in the premise


def test_rcb_vocabulary_rule_is_an_exact_three_quarters():
    premise = "Мама сказала, что завтра будет дождь."
    three_quarters = example("rcb", {"premise": premise, "hypothesis": "Завтра будет сильный дождь."})
    four_fifths = example("rcb", {"premise": premise, "hypothesis": "Мама сказала: завтра сильный дождь."})
    assert find_rule("rcb", "shared_vocabulary").apply(three_quarters) == "entailment"
    assert find_rule("rcb", "shared_vocabulary").apply(four_fifths) is None


def test_russe_same_form_predicts_false_and_comes_last():
    names = rule_names(RULES["russe"])
    assert names == ["length_gap", "token_overlap", "same_form"]
    assert find_rule("russe", "same_form").target is False


def test_russe_counts_whitespace_tokens_with_their_case_and_punctuation():
    def fields(first, second):
        return example("russe", {"word": "марка", "sentence1": first, "sentence2": second})

    # Word tokens would share 'марка' and 'машины' (2 of 3); whitespace tokens share none.
    assert find_rule("russe", "token_overlap").apply(fields("Марка машины.", "Дорогая марка машины")) is None
    assert find_rule("russe", "token_overlap").apply(fields("Марка машины.", "Дорогая Марка машины.")) is True
    # Seven dashes count as tokens: a gap of 12 whitespace tokens, where word tokens differ by 5.
    dashes = "Марка — это — знак — качества — и — стиля — всегда."
    assert find_rule("russe", "length_gap").apply(fields(dashes, "Марка хороша.")) is False
    assert find_rule("russe", "length_gap").apply(fields("Марка это знак качества и стиля всегда.", "Марка.")) is None


def test_muserc_all_lemmas_compares_the_answer_lemma_count_with_the_shared_lemmas():
    rule = find_rule("muserc", "all_answer_lemmas_in_text")
    # Every lemma occurs in the passage, but 'Тимур' twice: four lemmas against three shared.
    assert rule.apply(example("muserc", {"passage": MUSERC_PASSAGE, "answer": "Тимур, Тимур стал чемпионом."})) is None
    assert rule.apply(example("muserc", {"passage": MUSERC_PASSAGE, "answer": "«Тимур» стал чемпионом!"})) == 1


def test_muserc_answer_length_counts_whitespace_tokens():
    dashes = example("muserc", {"passage": MUSERC_PASSAGE, "answer": "Тимур — чемпион — навсегда"})  # 5 tokens, 3 words
    assert find_rule("muserc", "short_answer").apply(dashes) is None
    assert (
        find_rule("muserc", "short_answer").apply(example("muserc", {"passage": "", "answer": "Тимур — чемпион"})) == 0
    )


def test_danetqa_searches_the_question_as_the_authors_regular_expressions_do():
    def fires(name, question):
        return find_rule("danetqa", name).apply(example("danetqa", {"question": question, "passage": ""})) is not None

    assert fires("mentions_was", "Правда ли, что Пушкин был поэтом?")  # 'был' anywhere
    assert fires("mentions_is_it_true", "А правда ли, что киты рыбы?")
    assert fires("starts_with_belongs", "Входит в состав Греции Крит?")  # 'входит' at the start, 'ли' or not
    assert not fires("starts_with_belongs", "Крит входит ли в состав Греции?")

    def passage_of(n):
        return example("danetqa", {"question": "Кит?", "passage": " ".join(["слово"] * n)})

    assert find_rule("danetqa", "long_passage").apply(passage_of(90)) is False  # from 90 words on
    assert find_rule("danetqa", "long_passage").apply(passage_of(89)) is None


def test_each_text_is_analysed_once_per_call_and_forgotten_after(monkeypatch):
    import rueval.core.text

    analysed = []
    real = rueval.core.text.word_forms

    def counted(text):
        analysed.append(text)
        return real(text)

    # every lemmatisation tokenises its text first, one at a time (base.lemmas) or in bulk (lemmas_of)
    monkeypatch.setattr(rueval.core.text, "word_forms", counted)
    task = get_task("rucos")
    queries = [
        example("rucos", {"passage": RUCOS_PASSAGE, "query": f"@placeholder прилетел в Москву {i}."}, idx=i)
        for i in range(5)
    ]
    solver = HeuristicSolver(rules="all")
    solver.fit(task, [])
    solver.predict(task, queries)
    assert analysed.count(RUCOS_PASSAGE) == 1
    solver.predict(task, queries)
    assert analysed.count(RUCOS_PASSAGE) == 2  # a new call analyses afresh: nothing outlives a call


def test_lidirus_tokens_keep_their_case():
    pair = example("lidirus", {"sentence1": "Кошка спит.", "sentence2": "кошка спит."})
    assert find_rule("lidirus", "two_unshared_words").apply(pair) == "not_entailment"  # 'Кошка' and 'кошка'
    assert find_rule("lidirus", "same_lemmas").apply(pair) == "entailment"


def test_lidirus_tries_its_entailment_rules_first():
    # 'он' in both sentences (entailment) and 'не' in one (not_entailment): the authors' solver order decides.
    pair = example("lidirus", {"sentence1": "Вчера он не спал.", "sentence2": "Вчера он спал."})
    assert find_rule("lidirus", "word_in_one_sentence").apply(pair) == "not_entailment"
    assert first_prediction(RULES["lidirus"], pair) == "entailment"


def test_first_rule_that_fires_wins_and_the_fallback_takes_the_rest():
    task = get_task("danetqa")
    train = [Example(i, {}, label) for i, label in enumerate([True, True, False])]
    questions = ["Входит ли Крит в состав Греции?", "Был ли Пушкин поэтом?", "Кит — рыба?"]
    examples = [example("danetqa", {"question": q, "passage": "Текст."}, idx=i) for i, q in enumerate(questions)]
    solver = make_solver("heuristic", fallback="majority", rules="all")
    solver.fit(task, train)
    assert solver.predict(task, examples) == [False, True, True]  # rule, rule, majority of train
    # A question opening with 'был' that is also long: row 1 comes before row 6.
    long_was = example("danetqa", {"question": "Был ли Александр Сергеевич Пушкин великим поэтом?", "passage": ""})
    assert solver.predict(task, [long_was]) == [True]


def test_tasks_without_rules_are_the_fallback_alone():
    task = get_task("rwsd")
    train = [Example(i, {}, label) for i, label in enumerate([False, False, True])]
    solver = HeuristicSolver(seed=3, fallback="weighted-random")
    solver.fit(task, train)
    predictions = solver.predict(task, [Example(i, {"text": "Кубок не влез в чемодан."}) for i in range(400)])
    assert set(predictions) == {True, False}
    assert 0.55 < predictions.count(False) / 400 < 0.8
    again = HeuristicSolver(seed=3, fallback="weighted-random")
    again.fit(task, train)
    assert again.predict(task, [Example(i, {"text": "Кубок не влез в чемодан."}) for i in range(400)]) == predictions


def test_the_fallback_must_be_a_trivial_baseline():
    with pytest.raises(RuevalError, match="unknown fallback 'tfidf'"):
        HeuristicSolver(fallback="tfidf")
    with pytest.raises(RuevalError, match="unknown rule choice 'best'"):
        HeuristicSolver(rules="best")


def danetqa_train(labelled):
    return [example("danetqa", {"question": q, "passage": "Текст."}, gold, i) for i, (q, gold) in enumerate(labelled)]


def rule_names(rules):
    return [rule.name for rule in rules]


def test_fitted_rules_drop_what_loses_to_the_fallback_on_train():
    task = get_task("danetqa")
    train = danetqa_train(
        [
            ("Был ли Пушкин поэтом?", False),  # 'был' (True) is wrong on 2 of its 3; majority False right on 2
            ("Была ли Москва столицей?", False),
            ("Были ли динозавры теплокровными?", True),
            ("Есть ли жизнь на Марсе?", True),  # 'есть' (True) right where majority is wrong: kept
            ("Входит ли Крит в состав Греции?", False),  # 'входит ли' (False) only ties with majority: dropped
            ("Кит — рыба?", False),
        ]
    )
    fallback = TrivialSolver("majority")
    fallback.fit(task, train)
    kept = rule_names(select_rules(task, RULES["danetqa"], train, fallback))
    # 'long question' (False) then takes the Crete question and also only ties; rules that never fire stay
    assert kept == ["starts_with_is", "mentions_eat", "mentions_is_it_true", "long_passage"]

    solver = HeuristicSolver(fallback="majority")
    solver.fit(task, train)
    assert rule_names(solver.rules) == kept
    assert solver.predict(task, danetqa_train([("Был ли Гоголь поэтом?", None)])) == [False]  # the fallback's
    every = HeuristicSolver(fallback="majority", rules="all")
    every.fit(task, train)
    assert every.rules == RULES["danetqa"] and every.predict(
        task, danetqa_train([("Был ли Гоголь поэтом?", None)])
    ) == [True]


def test_a_rule_is_judged_on_what_the_rules_kept_before_it_leave():
    task = get_task("danetqa")
    train = danetqa_train(
        [
            ("Входит ли Крым в состав большой северной страны?", False),  # 'входит ли' and long (both False): right
            ("Входит ли Нил в список самых длинных рек мира?", False),
            ("Какой город является столицей северной страны Норвегии сейчас?", True),  # long: wrong
            ("Кит рыба?", True),
            ("Москва столица?", True),
        ]
    )
    fallback = TrivialSolver("majority")  # True
    fallback.fit(task, train)
    long_question = [find_rule("danetqa", "long_question")]
    # On its own, 'long question' is right on 2 of its 3 examples, where the majority is right on 1 ...
    assert rule_names(select_rules(task, long_question, train, fallback)) == ["long_question"]
    # ... but after 'входит ли' takes the first two, it is left with the Norway question, which it gets wrong.
    kept = select_rules(task, [find_rule("danetqa", "starts_with_belongs"), *long_question], train, fallback)
    assert rule_names(kept) == ["starts_with_belongs"]


def rcb_train(labelled):
    premise = "Я знаю, что он опоздает."
    return [example("rcb", {"premise": premise, "hypothesis": h}, gold, i) for i, (h, gold) in enumerate(labelled)]


def test_fitted_rules_are_judged_by_the_task_score_not_accuracy_alone():
    task = get_task("rcb")  # score: the mean of macro-F1 and accuracy
    short, long = "Он опоздает.", "Он опоздает на утренний поезд до самой Твери сегодня."
    train = rcb_train(
        [(short, "contradiction")] * 2  # 'hypothesis < 5 words' (contradiction) fires on these five:
        + [(short, "neutral")] * 3  # right on 2, where the majority (neutral) is right on 3
        + [(long, "neutral")] * 4
        + [(long, "entailment")] * 2
    )
    fallback = TrivialSolver("majority")
    fallback.fit(task, train)
    rule = [find_rule("rcb", "short_hypothesis")]
    # Without the rule: accuracy 7/11, macro-F1 (14/18 + 0 + 0) / 3, score (63.6 + 25.9) / 2 = 44.8.
    # With it: accuracy 6/11, macro-F1 (F1 contradiction 4/7 + F1 neutral 8/13 + 0) / 3, score (54.5 + 39.5) / 2 = 47.0.
    assert rule_names(select_rules(task, rule, train, fallback)) == ["short_hypothesis"]
    # Where accuracy is the whole score, the same labels on TERRa-shaped data drop the rule.
    terra = get_task("terra")
    as_terra = [
        example("terra", {"premise": LONG_PREMISE, "hypothesis": e.fields["hypothesis"]}, label, e.idx)
        for e, label in zip(train, ["entailment"] * 2 + ["not_entailment"] * 7 + ["entailment"] * 2, strict=True)
    ]
    low = [Rule.predicting("entailment", lambda e: e.fields["hypothesis"] == short, "short hypothesis")]
    fallback.fit(terra, as_terra)
    assert select_rules(terra, low, as_terra, fallback) == ()


def test_a_random_fallback_is_scored_over_draws_that_leave_its_own_stream_alone():
    task = get_task("danetqa")
    train = danetqa_train([("Есть ли жизнь на Марсе?", True), ("Кит рыба?", False), ("Лось олень?", True)] * 4)
    unseen = danetqa_train([(f"Кит рыба номер {i}?", None) for i in range(40)])  # no rule fires on these
    solver = HeuristicSolver(seed=7, fallback="random")
    solver.fit(task, train)
    assert "starts_with_is" in rule_names(solver.rules)  # always right, where a coin is right half the time
    alone = TrivialSolver("random", seed=7)
    alone.fit(task, train)
    assert solver.predict(task, unseen) == alone.predict(task, unseen)


def test_a_task_with_a_borrowed_train_split_keeps_every_rule():
    task = get_task("lidirus")  # its train split is TERRa's
    train = [
        example(
            "lidirus", {"sentence1": "Кошка спит на диване.", "sentence2": "На диване спит кошка."}, "not_entailment", i
        )
        for i in range(3)
    ]  # 'same lemmas' (entailment) is wrong on all of them
    solver = HeuristicSolver(fallback="majority")
    solver.fit(task, train)
    assert solver.rules == RULES["lidirus"]


def test_coverage_counts_each_rule_on_its_own_and_what_no_rule_covers():
    labelled = [
        ("Был ли Пушкин поэтом?", True),  # row 1 right
        ("Был ли Александр Сергеевич Пушкин великим поэтом?", False),  # rows 1 (wrong) and 6 (right)
        ("Правда ли, что киты рыбы?", False),  # row 5 right (5 words: not a long question)
        ("Кит — рыба?", True),  # nothing fires
    ]
    examples = [
        example("danetqa", {"question": q, "passage": "Текст."}, gold, i) for i, (q, gold) in enumerate(labelled)
    ]
    examples.append(
        example("danetqa", {"question": "Кит — рыба?", "passage": "Текст."}, None, 9)
    )  # unlabelled: ignored
    rows = {row.name: row for row in coverage(get_task("danetqa"), examples)}
    assert list(rows)[-1] == NO_RULE and len(rows) == len(RULES["danetqa"]) + 1
    assert (rows["mentions_was"].covered, rows["mentions_was"].correct) == (2, 1)
    assert (rows["mentions_is_it_true"].covered, rows["mentions_is_it_true"].correct) == (1, 1)
    assert (rows["long_question"].covered, rows["long_question"].correct) == (1, 1)
    assert rows["starts_with_is"].covered == 0
    assert rows[NO_RULE] == RuleCoverage(NO_RULE, "left to the fallback baseline", None, 1, 0)
    assert rows["mentions_was"].description == "The question starts with 'БЫЛ' ('was/were')"
    assert coverage("rwsd", examples) == [RuleCoverage(NO_RULE, "left to the fallback baseline", None, 4, 0)]


def test_rules_refuse_examples_without_their_fields():
    terra_shaped = example("lidirus", {"premise": "Кошка спит.", "hypothesis": "Кошка спит."}, "entailment")
    with pytest.raises(RuevalError, match="example 0: field 'sentence1' is missing"):
        coverage("lidirus", [terra_shaped])


def test_rule_predicting_names_the_rule_after_its_predicate():
    def sky_is_blue(e):
        return "небо" in e.fields["text"]

    rule = Rule.predicting("yes", sky_is_blue, "The text mentions the sky")
    assert rule.name == "sky_is_blue"
    assert rule.apply(Example(0, {"text": "небо"})) == "yes" and rule.apply(Example(0, {"text": "море"})) is None


def test_heuristics_command_prints_each_rule_with_its_counts(cli, data_dir):
    write_jsonl(
        data_dir / "DaNetQA" / "val.jsonl",
        [
            {"idx": 0, "question": "Был ли Пушкин поэтом?", "passage": "Пушкин — поэт.", "label": True},
            {"idx": 1, "question": "Входит ли Крит в состав Греции?", "passage": "Крит — остров.", "label": False},
            {"idx": 2, "question": "Кит — рыба?", "passage": "Кит — зверь.", "label": False},
            {"idx": 3, "question": "Есть ли жизнь на Марсе?", "passage": "Марс — планета.", "label": False},
        ],
    )
    result = cli("heuristics", "-t", "danetqa", "--data", data_dir)
    assert result.exit_code == 0, result.stderr
    for rule in RULES["danetqa"]:
        assert rule.name in result.stdout
    assert "danetqa / val (4 labelled examples)" in result.stdout
    assert "1 (25.0%)" in result.stdout and "1 (100.0%)" in result.stdout and "0 (0.0%)" in result.stdout
    assert NO_RULE in result.stdout


def test_heuristics_command_rejects_bad_tasks_and_unlabelled_splits(cli, data_dir):
    assert cli("heuristics", "-t", "nosuchtask").exit_code == 2
    rwsd = cli("heuristics", "-t", "rwsd")
    assert rwsd.exit_code == 2 and "rwsd has no heuristic rules" in rwsd.stderr
    unlabelled = cli("heuristics", "-t", "terra", "--data", data_dir, "--split", "test")
    assert unlabelled.exit_code == 2 and "no gold labels" in unlabelled.stderr


@pytest.mark.parametrize("tasks", ["terra,parus", "rsg", "all", "RCB, danetqa,rcb"])
def test_heuristics_command_takes_task_lists_as_run_does(cli, tasks):
    """-t reads as run's -t (rueval.tasks.resolve_tasks): one table per task with rules, in order; the rest named."""
    result = cli("heuristics", "-t", tasks)
    assert result.exit_code == 0, result.stderr
    chosen = [task.name for task in resolve_tasks(tasks)]
    shown = re.findall(r"Heuristics on (\w+) / ", result.stdout)
    assert shown == [name for name in chosen if name in RULES]
    for name in shown:  # each table as the task alone prints it
        assert cli("heuristics", "-t", name).stdout in result.stdout
    left_out = [name for name in chosen if name not in RULES]
    assert (f"left out: {', '.join(left_out)}" in result.stderr) == bool(left_out)
    if tasks == "all":
        assert cli("heuristics").stdout == result.stdout  # all by default, as run


def test_heuristics_command_refuses_a_list_with_no_rules(cli):
    tape = cli("heuristics", "-t", "tape")
    names = ", ".join(task.name for task in resolve_tasks("tape"))
    assert tape.exit_code == 2 and tape.stderr == (
        f"error: {names} have no heuristic rules; tasks with rules: {', '.join(RULES)}\n"
    )


def test_heuristic_model_runs_on_all_sixteen_bundled_tasks(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "-m", "heuristic", "-o", out)
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert list(summary["tasks"]) == [task.name for task in resolve_tasks("all")]  # the bundled samples' tasks
    assert summary["model"] == "heuristic"
    assert summary["solver_options"] == {"fallback": "majority", "rules": "fitted"}


def test_the_fallback_is_part_of_the_run_fingerprint(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("run", "-t", "rwsd", "-m", "heuristic", "-o", out).exit_code == 0
    majority = json.loads((out / "tasks" / "rwsd.json").read_text(encoding="utf-8"))
    rerun = ("run", "-t", "rwsd", "-m", "heuristic", "--fallback", "random", "--seed", "4", "-o", out, "--force")
    assert cli(*rerun).exit_code == 0
    rerun = json.loads((out / "tasks" / "rwsd.json").read_text(encoding="utf-8"))
    assert rerun["fingerprint"] != majority["fingerprint"]
    assert json.loads((out / "results.json").read_text())["solver_options"] == {"fallback": "random", "rules": "fitted"}
    assert cli("run", "-t", "rwsd", "-m", "heuristic", "--rules", "all", "-o", out, "--force").exit_code == 0
    assert (
        json.loads((out / "tasks" / "rwsd.json").read_text(encoding="utf-8"))["fingerprint"] != majority["fingerprint"]
    )


def test_submit_passes_the_fallback_to_the_heuristic_model(cli, tmp_path):
    result = cli("submit", "-m", "heuristic", "--fallback", "weighted-random", "-o", tmp_path / "sub.zip")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "sub.zip").exists() and "RuCoS.jsonl" in result.stdout
