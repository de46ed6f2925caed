import json

import pytest

import rueval.core.text
import rueval.scoring.slices
from rueval.core.errors import RuevalError
from rueval.scoring.slices import (
    MIN_BUCKET_SIZE,
    SLICES,
    answer_category,
    flesch_reading_ease,
    gold_answer_text,
    resolve_slices,
    slice_scores,
    type_token_ratio,
)
from rueval.scoring.task_scores import score_task
from rueval.tasks import TASKS, Example

WINOGRAD = TASKS["winograd"]


def winograd(text: str, options: list[str], answer: str, label: int, idx: int) -> Example:
    fields = {"text": text, "options": options, "reference": "которая", "homonymia_type": 1.1, "answer": answer}
    return Example(idx=idx, fields=fields, label=label)


def test_flesch_reading_ease_uses_oborneva_coefficients_and_vowels_as_syllables():
    # 3 words, 1 sentence, 6 syllables (ма-ма мы-ла ра-му)
    assert flesch_reading_ease("Мама мыла раму.") == pytest.approx(206.835 - 1.3 * 3 - 60.1 * 2)
    # 6 words in 2 sentences, 11 syllables (кран has one)
    assert flesch_reading_ease("Мама мыла раму. Папа чинил кран.") == pytest.approx(206.835 - 1.3 * 3 - 60.1 * 11 / 6)
    assert flesch_reading_ease("...") is None


def test_type_token_ratio_counts_lemmas_not_word_forms():
    # кошка, видеть, кошка, кошка, спать: three distinct lemmas of five
    assert type_token_ratio("Кошка видит кошку. Кошки спят.") == pytest.approx(3 / 5)


@pytest.mark.parametrize(
    ("answer", "category"),
    [
        ("1812 год", "number"),
        ("три", "number"),
        ("Пушкин", "person"),
        ("Юрием Всеволодовичем", "person"),
        ("Москва", "place"),
        ("ртуть", "other"),
        ("толстому слою жира", "other"),
    ],
)
def test_answer_category(answer, category):
    assert answer_category(answer) == category


def test_gold_answer_text_reads_the_chosen_inline_option():
    question = "Чем измеряют температуру? (A) линейкой (B) термометром (C) весами (D) часами"
    example = Example(idx=0, fields={"question": question}, label="B")
    assert gold_answer_text(TASKS["ru_worldtree"], example) == "термометром"
    broken = Example(idx=1, fields={"question": "Чем измеряют температуру? (A) линейкой"}, label="B")
    assert gold_answer_text(TASKS["ru_worldtree"], broken) is None  # unreadable options: no answer bucket
    assert gold_answer_text(TASKS["chegeka"], Example(idx=2, fields={}, label=("Пушкин", "А. С. Пушкин"))) == "Пушкин"


def test_resolve_slices():
    assert resolve_slices("all") == tuple(SLICES)
    assert resolve_slices("length, gender") == ("length", "gender")
    with pytest.raises(RuevalError, match="unknown slice 'colour'"):
        resolve_slices("length,colour")


def test_winograd_slices_bucket_by_candidate_morphology_and_count():
    examples = [
        winograd(
            "Художница подарила картину подруге, которая мечтала о море.", ["картину", "подруге"], "подруге", 1, 0
        ),
        winograd("Мы купили книгу в лавке, которая стояла у реки.", ["книгу", "лавке"], "книгу", 0, 1),
        winograd("Студенты встретили профессора, который читал лекцию.", ["Студенты", "профессора"], "Студенты", 0, 2),
        winograd("Повар взял соль из кастрюли, которую закрыл.", ["соль", "кастрюли", "крышкой"], "кастрюли", 1, 3),
    ]
    preds = [1, 1, 0, 0]
    result = slice_scores(WINOGRAD, examples, preds, ["gender", "number", "candidates", "class", "exam"])
    assert "exam" not in result  # RuWorldTree only
    assert {b: v["n"] for b, v in result["gender"].items()} == {"feminine": 3, "masculine": 1}
    assert {b: v["n"] for b, v in result["number"].items()} == {"plural": 1, "singular": 3}
    assert {b: v["n"] for b, v in result["candidates"].items()} == {"2": 3, "3": 1}
    # every metric per bucket is score_task on the bucket's examples
    feminine = [0, 1, 3]
    expected = score_task(WINOGRAD, [examples[i] for i in feminine], [preds[i] for i in feminine]).metrics
    assert result["gender"]["feminine"] == {"n": 3, **expected}
    # buckets below MIN_BUCKET_SIZE keep their size but get no metrics
    assert MIN_BUCKET_SIZE == 2
    assert result["gender"]["masculine"] == {"n": 1}
    assert result["class"]["0"]["accuracy"] == pytest.approx(50.0)  # the recall of class 0


def test_ranges_are_ordered_by_value_not_alphabetically():
    texts = ["Кот спит.", "Очень длинный текст " * 10, "Кот спит на тёплом диване у окна, а за окном идёт снег."]
    examples = [Example(idx=i, fields={"text": t}, label=(0, 0, 0, 0, 0)) for i, t in enumerate(texts)]
    result = slice_scores(TASKS["sit_ethics"], examples, [(0, 0, 0, 0, 0)] * 3, ["length"])
    assert list(result["length"]) == ["1-10 words", "11-20 words", "21-40 words"]


def test_worldtree_slices_read_exam_grade_and_gold_option(tmp_path):
    def question(answer_text: str, grade: int, exam: str, idx: int) -> Example:
        text = f"Что это? (A) {answer_text} (B) ничего (C) вода (D) камень"
        return Example(idx=idx, fields={"question": text, "exam_name": exam, "school_grade": grade}, label="A")

    examples = [
        question("12 метров", 3, "MCAS", 0),
        question("Пушкин", 3, "MCAS", 1),
        question("песок", 10, "TIMSS", 2),
    ]
    result = slice_scores(TASKS["ru_worldtree"], examples, ["A", "B", "A"], ["exam", "grade", "answer"])
    assert list(result["grade"]) == ["grade 3", "grade 10"]  # natural order
    assert result["grade"]["grade 3"]["accuracy"] == pytest.approx(50.0)
    assert set(result["exam"]) == {"MCAS", "TIMSS"}
    assert {b: v["n"] for b, v in result["answer"].items()} == {"number": 1, "other": 1, "person": 1}


def test_muserc_bucket_size_counts_questions():
    def answer(passage: str, question: int, answer_idx: int, label: int) -> Example:
        fields = {"passage": passage, "question": "Кто?", "answer": "он"}
        return Example(idx=(0, question, answer_idx), fields=fields, label=label, group=(0, question))

    short = "Кот спит."
    long = "Кот долго спит на тёплом диване у окна, а за окном тихо падает белый снег."
    examples = [
        *(answer(short, 0, i, label) for i, label in enumerate((1, 0, 1))),
        answer(long, 1, 0, 1),
        answer(long, 2, 0, 0),
    ]
    result = slice_scores(TASKS["muserc"], examples, [1, 0, 1, 1, 1], ["length"])
    assert result["length"]["1-10 words"] == {"n": 3}  # three answers, but one question
    assert result["length"]["11-20 words"]["question_em"] == pytest.approx(50.0)


def test_a_passage_shared_by_answers_is_measured_once(monkeypatch):
    passage = "Кот долго спит на тёплом диване у окна. За окном тихо падает белый снег."
    examples = [
        Example(idx=(0, 0, k), fields={"passage": passage, "question": "Кто?", "answer": a}, label=k % 2, group=(0, 0))
        for k, a in enumerate(("кот", "пёс", "снег"))
    ]
    measured = []
    monkeypatch.setattr(
        rueval.scoring.slices, "words", lambda text: measured.append(text) or rueval.core.text.words(text)
    )
    for cached in (
        rueval.scoring.slices.word_count,
        rueval.scoring.slices.flesch_reading_ease,
        rueval.scoring.slices.type_token_ratio,
    ):
        cached.cache_clear()
    result = slice_scores(TASKS["muserc"], examples, [1, 1, 0], ["length", "readability", "diversity"])
    assert measured == [passage, passage]  # once for the length, once for the readability
    assert result["length"] == {"11-20 words": {"n": 3}}  # one question: too few for metrics
    assert [bucket["n"] for bucket in result["readability"].values()] == [3]
    assert [bucket["n"] for bucket in result["diversity"].values()] == [3]


def test_run_with_slices_records_and_prints_them(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "-t", "winograd,ru_worldtree,sit_ethics", "--slices", "all", "-o", out)
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert summary["slices"] == list(SLICES)
    winograd_slices = {"length", "class", "readability", "diversity", "gender", "number", "candidates"}
    assert set(summary["tasks"]["winograd"]["slices"]) == winograd_slices
    assert {"exam", "grade", "answer"} <= set(summary["tasks"]["ru_worldtree"]["slices"])
    assert "domain" in summary["tasks"]["sit_ethics"]["slices"]
    for task_result in summary["tasks"].values():
        for buckets in task_result["slices"].values():
            assert sum(b["n"] for b in buckets.values()) <= task_result["n"]
    assert "scores per slice" in result.stdout and "grade 3" in result.stdout


def test_run_rejects_unknown_slice_before_any_work(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "-t", "rcb", "--slices", "length,colour", "-o", out)
    assert result.exit_code == 2
    assert "unknown slice 'colour'" in result.stderr
    assert not out.exists()
