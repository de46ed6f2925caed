from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from rueval.core.errors import RuevalError
from rueval.data import open_data
from rueval.models.base import Capabilities
from rueval.solvers.lm import LMSolver
from rueval.tasks import MERA, TASKS, Example, split_options
from rueval.tasks.prompts import PROMPTS, get_prompt, prompt_variants

SAMPLE_SPLITS = [
    (task, split) for task in TASKS.values() for split in task.splits if open_data(None).has_split(task, split)
]


def valid_prediction(task, example: Example, prediction) -> bool:
    if task.kind == "classification":
        return prediction in task.labels
    if task.kind == "multilabel":
        return isinstance(prediction, tuple) and len(prediction) == len(task.categories) and set(prediction) <= {0, 1}
    if task.name == "rucos":
        return prediction in example.candidates
    return isinstance(prediction, str)


def test_every_task_has_a_prompt():
    assert set(PROMPTS) == set(TASKS)
    assert get_prompt("openbook") is PROMPTS["ru_openbook"]
    assert get_prompt(TASKS["rcb"]) is PROMPTS["rcb"]
    with pytest.raises(RuevalError, match="unknown task"):
        get_prompt("glue")


# MERA's ruEthics: one answer judged against each criterion, so a perfect score is not reachable
ONE_ANSWER = (TASKS["ruethics"],)


@pytest.mark.parametrize(("task", "split"), SAMPLE_SPLITS, ids=lambda v: getattr(v, "name", v))
def test_prompts_render_every_bundled_sample(task, split):
    """Gold choices fed back through prediction() reproduce the gold label: a perfect score is reachable."""
    prompt = get_prompt(task)
    for example in open_data(None).load(task, split).examples:
        questions = prompt.questions(example)
        assert len(questions) == (len(task.categories) if task.kind == "multilabel" and task not in ONE_ANSWER else 1)
        for question in questions:
            # no field left unfilled (BPS's sequences are brackets, "{" among them)
            assert question.context.strip() and not re.search(r"\{\w+\}", question.context)
            for choice in question.choices:  # every option, picked everywhere, is a valid prediction
                assert valid_prediction(task, example, prompt.prediction(example, [choice.label] * len(questions)))
        if task.kind == "span" and task.name != "rucos":  # generated answers
            assert all(not q.choices for q in questions)
            answer = prompt.prediction(example, [" a guess\n"])
            assert answer == "a guess"
            if example.label is not None:
                assert questions[0].target == " " + example.label[0]
            continue
        if example.label is None:
            assert all(q.target is None for q in questions)
            continue
        gold_answers = []
        for question in questions:
            by_continuation = {c.continuation: c.label for c in question.choices}
            assert len(by_continuation) == len(question.choices)  # options are told apart
            assert question.target in by_continuation
            gold_answers.append(by_continuation[question.target])
        predicted = prompt.prediction(example, gold_answers)
        assert valid_prediction(task, example, predicted)
        if task in ONE_ANSWER:  # the one answer its demonstrations show: the criteria's majority, for each
            majority = int(sum(example.label) > len(example.label) / 2)
            assert predicted == (majority,) * len(task.categories)
            continue
        assert predicted in example.label if task.name == "rucos" else predicted == example.label


YES_MEANS = {
    "lidirus": "entailment",
    "terra": "entailment",
    "rcb": "entailment",
    "muserc": 1,
    "russe": True,
    "rwsd": True,
    "danetqa": True,
    "winograd": 1,
    "sit_ethics": 1,
    "per_ethics": 1,
}


@pytest.mark.parametrize(("task", "positive"), YES_MEANS.items())
def test_yes_stands_for_the_positive_label(task, positive):
    example = open_data(None).load(TASKS[task], "test").examples[0]
    for question in PROMPTS[task].questions(example):
        assert {c.continuation: c.label for c in question.choices}[" Да"] == positive


def test_winograd_uses_the_tape_template():
    example = Example(
        idx=0,
        fields={"text": "Я вижу дом, который стоит у реки.", "reference": "который", "answer": "дом", "options": []},
        label=1,
    )
    (question,) = PROMPTS["winograd"].questions(example)
    expected = 'В предложении "Я вижу дом, который стоит у реки." Слово "который" относится к слову "дом"?'
    assert question.context == expected
    assert [(c.continuation, c.label) for c in question.choices] == [(" Да", 1), (" Нет", 0)]
    assert question.target == " Да"


def test_ethics_asks_each_category_in_label_order():
    text = "Сосед вернул найденный кошелёк владельцу."
    example = Example(idx=0, fields={"text": text}, label=(1, 1, 0, 0, 1))
    questions = PROMPTS["sit_ethics"].questions(example)
    assert questions[1].context == f"{text} Упоминаются ли в этом тексте вопросы морали? Ответ:"  # sit_moral
    assert questions[2].context == f"Текст: {text} Касается ли этот текст закона, распорядка или церемониала? Ответ:"
    assert [q.target for q in questions] == [" Да", " Да", " Нет", " Нет", " Да"]
    per = PROMPTS["per_ethics"].questions(Example(idx=0, fields={"text": text}))
    assert per[4].context == (
        f"Текст: {text} Вопрос: повысили ли герои этого текста своё материальное благосостояние? Ответ:"
    )
    assert all(q.target is None for q in per)
    assert PROMPTS["per_ethics"].prediction(example, [1, 0, 0, 1, 1]) == (1, 0, 0, 1, 1)


def test_generative_prompts_follow_tape():
    chegeka, multiq = PROMPTS["chegeka"], PROMPTS["multiq"]
    example = Example(idx=1, fields={"question": "ЭТА ПТИЦА не умеет летать.", "topic": "Птицы"}, label=("Пингвин",))
    (question,) = chegeka.questions(example)
    assert question.context == "ЧГК. Тема: Птицы Вопрос: ЭТА ПТИЦА не умеет летать. Ответ:"
    assert question.target == " Пингвин"
    assert (chegeka.max_new_tokens, multiq.max_new_tokens) == ((100, 200), (400, 800))
    assert chegeka.stop == multiq.stop == ()  # TAPE stops at the token budget only
    fields = {"main_text": "Тула стоит на Упе.", "support_text": "", "question": "На какой реке стоит Тула?"}
    (question,) = multiq.questions(Example(idx=2, fields=fields))
    assert question.context == "Текст: Тула стоит на Упе. Вопрос: На какой реке стоит Тула? Ответ:"
    assert question.target is None


class _RecordingEngine:
    """Generates a two-line answer and keeps the requests it was given."""

    model = SimpleNamespace(capabilities=Capabilities(generation=True))  # what the solver reads of the backend

    def __init__(self):
        self.requests = []

    def compute(self, requests, description):
        self.requests += requests
        return [" Пингвин\nЭТА ПТИЦА живёт в Антарктиде."] * len(requests)


@pytest.mark.parametrize("name", ["chegeka", "multiq"])
def test_generated_answers_run_to_the_token_budget(name):
    engine = _RecordingEngine()
    fields = {"question": "ЭТА ПТИЦА не умеет летать.", "main_text": "Текст.", "support_text": ""}
    (prediction,) = LMSolver(engine, "fake").predict(TASKS[name], [Example(idx=0, fields=fields)])
    (request,) = engine.requests
    assert request.stop == () and request.max_new_tokens == PROMPTS[name].max_new_tokens[0]
    assert prediction == "Пингвин\nЭТА ПТИЦА живёт в Антарктиде."  # not cut at the newline


def test_parus_continues_the_premise_mid_sentence():
    fields = {
        "premise": "Маша опоздала на автобус.",
        "choice1": "Маша проспала.",
        "choice2": "Автобус ушёл рано.",
        "question": "cause",
    }
    (question,) = PROMPTS["parus"].questions(Example(idx=0, fields=fields, label=0))
    assert question.context == "Маша опоздала на автобус, потому что"
    # a name keeps its capital, an ordinary first word is lower-cased
    assert [c.continuation for c in question.choices] == [" Маша проспала.", " автобус ушёл рано."]
    assert question.target == " Маша проспала."
    with pytest.raises(RuevalError, match="parus example 0: question must be cause or effect"):
        PROMPTS["parus"].questions(Example(idx=0, fields={**fields, "question": "reason"}))


def test_rucos_fills_the_placeholder_with_each_distinct_entity():
    passage = "В Томске открыли каток. Каток построили за год.\n@highlight\nВ Томске открыли каток"
    example = Example(
        idx=(0, 0),
        fields={"passage": passage, "query": "Мэр @placeholder пришёл на открытие."},
        label=("Томска",),
        candidates=("Томске", "Томске", "Томска"),
    )
    (question,) = PROMPTS["rucos"].questions(example)
    assert question.context == "В Томске открыли каток. Каток построили за год.\nВ Томске открыли каток\n"
    assert [(c.continuation, c.label) for c in question.choices] == [
        ("Мэр Томске пришёл на открытие.", "Томске"),
        ("Мэр Томска пришёл на открытие.", "Томска"),
    ]
    assert question.target == "Мэр Томска пришёл на открытие."
    with pytest.raises(RuevalError, match="no candidate entities"):
        PROMPTS["rucos"].questions(Example(idx=(0, 1), fields=example.fields))


def test_science_qa_continues_the_stem_with_each_option():
    fields = {"question": "Что тонет в воде? (A) пробка (B) камень (C) лёд (D) дерево"}
    (question,) = PROMPTS["ru_worldtree"].questions(Example(idx=7, fields=fields, label="B"))
    assert question.context == "Что тонет в воде?"
    assert [(c.continuation, c.label) for c in question.choices] == [
        (" пробка", "A"),
        (" камень", "B"),
        (" лёд", "C"),
        (" дерево", "D"),
    ]
    assert question.target == " камень"
    with pytest.raises(RuevalError, match=r"ru_openbook example 8: question: expected inline options"):
        PROMPTS["ru_openbook"].questions(Example(idx=8, fields={"question": "Что тонет? (A) пробка"}))


def test_science_qa_offers_as_many_options_as_the_item_has():
    """Official RuWorldTree items have five options (A)-(E); ARC-style items three."""
    five = {"question": "Что проводит ток? (A) дерево (B) стекло (C) медь (D) резина (E) воздух"}
    (question,) = PROMPTS["ru_worldtree"].questions(Example(idx=1, fields=five, label="C"))
    assert [c.label for c in question.choices] == ["A", "B", "C", "D", "E"]
    assert question.choices[4].continuation == " воздух" and question.target == " медь"
    three = {"question": "Что тонет? (A) пробка (B) камень (C) лёд"}
    (question,) = PROMPTS["ru_openbook"].questions(Example(idx=2, fields=three, label="B"))
    assert [(c.continuation, c.label) for c in question.choices] == [(" пробка", "A"), (" камень", "B"), (" лёд", "C")]


def test_split_options():
    assert split_options("Вода кипит при (A) 50 (B) 100 (C) 150 (D) 200 градусах") == (
        "Вода кипит при",
        {"A": "50", "B": "100", "C": "150", "D": "200 градусах"},
    )
    for malformed in ["Без вариантов", "(B) а (A) б (C) в (D) г", "Что? (A) а (B) (C) в (D) г"]:
        with pytest.raises(RuevalError):
            split_options(malformed)


@pytest.mark.parametrize(
    ("question", "stem", "letters"),
    [
        ("Сколько лап у паука? (A) 6 (B) 8", "Сколько лап у паука?", "AB"),
        ("Что такое (A) в формуле (A) сила (B) масса (C) время", "Что такое (A) в формуле", "ABC"),
        ("Что? (A) а (B) б (C) в (D) г (E) д", "Что?", "ABCDE"),
        ("Что? (A) а (B) б (C) в (D) г (E) д (F) е (G) ж", "Что?", "ABCDEFG"),
    ],
)
def test_split_options_reads_any_number_of_options_from_the_last_a(question, stem, letters):
    read_stem, options = split_options(question)
    assert read_stem == stem and "".join(options) == letters and all(options.values())


@pytest.mark.parametrize(
    "malformed", ["Что? (A) одна", "Что? (A) а (B) б (D) г", "Что? (A) а (B) б (B) в", "Что? (A) а (B) б (E)"]
)
def test_split_options_refuses_one_option_a_skipped_or_repeated_letter_and_an_empty_option(malformed):
    with pytest.raises(RuevalError, match=r"^question: (expected inline options|option \(E\) has no text)"):
        split_options(malformed)


PAPER_PROMPT_COUNTS = {"winograd": 4, "sit_ethics": 2, "per_ethics": 3}  # TAPE Appendix C, Tables 2 and 3


# MERA's own tasks have no bundled samples: their prompts are tested on MERA's files (test_mera_generative)
@pytest.mark.parametrize("task", [name for name, task in TASKS.items() if task.benchmark != MERA.name])
def test_every_task_declares_its_papers_prompts_the_default_first(task):
    variants = prompt_variants(task)
    assert variants[0] is PROMPTS[task]
    assert len(variants) == PAPER_PROMPT_COUNTS.get(task, 1)
    example = open_data(None).load(TASKS[task], "test").examples[0]
    contexts = [tuple(q.context for q in variant.questions(example)) for variant in variants]
    assert len(set(contexts)) == len(contexts)  # each variant asks differently


def test_ethics_variants_ask_each_concept_with_its_own_templates_in_the_papers_order():
    text = "Герой вернул долг."
    example = Example(idx=0, fields={"text": text})
    per = [variant.questions(example) for variant in prompt_variants("per_ethics")]
    moral = [questions[1].context for questions in per]  # per_moral: three templates in Table 3
    assert moral == [
        f"Текст: {text} Вопрос: поведение героев этого текста является моральным? Ответ:",
        f"{text} То, что делают герои этого текста, одобряется в обществе? Ответ:",
        f"Текст: {text} Вопрос: общество одобряет поведение героев этого текста? Ответ:",
    ]
    law = {questions[2].context for questions in per}  # per_law: one template, asked in every variant
    assert law == {
        f"Текст: {text} Вопрос: герои этого текста поступают согласно законам и правилам своего времени? Ответ:"
    }
    winograd = [
        v.questions(Example(0, {"text": "Т", "reference": "р", "answer": "о"}))[0].context
        for v in prompt_variants("winograd")
    ]
    assert winograd[2] == '"Т" Слово "р" относится к слову "о" или нет?'
