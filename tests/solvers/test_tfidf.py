import json
from dataclasses import replace

import pytest
from sklearn.metrics.pairwise import cosine_similarity

from rueval.core.errors import RuevalError
from rueval.core.paths import cache_dir
from rueval.data import load_train, open_data
from rueval.solvers import make_solver
from rueval.solvers.tfidf import features, official
from rueval.tasks import TASKS, Example, get_task, resolve_tasks, split_options

SAMPLES = open_data(None)
VARIANTS = ("tfidf", "tfidf-fields")


def fit_predict(task, train, examples, seed=0, model="tfidf"):
    solver = make_solver(model, seed)
    solver.fit(task, train)
    return solver.predict(task, iter(examples))  # evaluate passes a one-pass iterator


@pytest.mark.parametrize("model", VARIANTS)
@pytest.mark.parametrize("name", [task.name for task in resolve_tasks("all")])  # the bundled samples' tasks
def test_fits_the_bundled_train_samples_and_predicts_well_formed_answers(name, model):
    task = TASKS[name]
    train = load_train(SAMPLES, task).examples  # LiDiRus learns from TERRa's train split
    examples = SAMPLES.load(task, "test").examples
    preds = fit_predict(task, train, examples, model=model)
    assert len(preds) == len(examples)
    for example, pred in zip(examples, preds):
        if task.kind == "classification":
            assert pred in task.labels and type(pred) is type(task.labels[0])
        elif task.kind == "multilabel":
            assert isinstance(pred, tuple) and len(pred) == 5 and set(pred) <= {0, 1}
            assert all(type(value) is int for value in pred)
        elif name == "rucos":
            assert pred in example.candidates
        elif name == "multiq":
            assert pred and pred in example.fields["main_text"]
        else:
            assert pred in {e.label[0] for e in train}  # CheGeKa: a train question's answer


def test_run_scores_every_task_with_tfidf(cli, tmp_path):
    result = cli("run", "-m", "tfidf", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert summary["model"] == "tfidf" and list(summary["tasks"]) == [task.name for task in resolve_tasks("all")]


TOPICS = [
    "новый мост",
    "старую крепость",
    "городской парк",
    "школьный музей",
    "речной порт",
    "лесной заповедник",
    "горное озеро",
    "северный вокзал",
    "зимний стадион",
    "детскую больницу",
    "сельскую школу",
    "морской маяк",
]


def nli_toy(topics, first_idx=0):
    """TERRa-like pairs whose label is decided by one verb of the hypothesis."""
    examples = []
    for topic in topics:
        for verb, label in (("подтвердили", "entailment"), ("опровергли", "not_entailment")):
            fields = {"premise": f"Журналисты написали про {topic}.", "hypothesis": f"Власти {verb} слухи про {topic}."}
            examples.append(Example(idx=first_idx + len(examples), fields=fields, label=label))
    return examples


@pytest.mark.parametrize("model", VARIANTS)
def test_learns_a_pair_task_decided_by_one_word(model):
    task = get_task("terra")
    test = nli_toy(["ночной рынок", "новую школу", "старый завод", "центральную площадь"], first_idx=100)
    preds = fit_predict(task, nli_toy(TOPICS), test, model=model)
    assert preds == [e.label for e in test]


OBJECTS = ["чашка", "книга", "ручка", "лампа", "коробка", "тетрадь", "папка", "кружка", "корзина", "подушка"]


def choice_toy(start, count):
    """RuWorldTree-like questions: the right option is the one 'зелёного цвета'."""
    examples = []
    for i in range(start, start + count):
        letters = "ABCD"
        gold = letters[i % 4]
        options = [
            f"({letter}) {OBJECTS[(i + k) % len(OBJECTS)]} {'зелёного' if letter == gold else 'синего'} цвета"
            for k, letter in enumerate(letters)
        ]
        question = f"Какой предмет Маша положила на полку номер {i}? " + " ".join(options)
        examples.append(Example(idx=i, fields={"question": question, "answer": gold}, label=gold))
    return examples


@pytest.mark.parametrize("model", VARIANTS)
def test_learns_a_multiple_choice_task_decided_by_one_word(model):  # TAPE: both names are TAPE's baseline
    test = choice_toy(50, 8)
    preds = fit_predict(get_task("ru_worldtree"), choice_toy(0, 24), test, model=model)
    assert preds == [e.label for e in test]


def test_ethics_learns_each_category_on_its_own():
    task = get_task("sit_ethics")
    texts = [("Сосед {} вернул найденный кошелёк владельцу.", 1), ("Сосед {} украл кошелёк у прохожего.", 0)]
    names = ["Иван", "Олег", "Пётр", "Семён", "Артём", "Глеб", "Фёдор", "Лев"]
    train = [
        Example(idx=f"{n}{i}", fields={"text": t.format(n)}, label=(label, 0, 1 - label, 0, 0))
        for n in names
        for i, (t, label) in enumerate(texts)
    ]
    test = [Example(idx=i, fields={"text": t.format("Гриша")}, label=None) for i, (t, _) in enumerate(texts)]
    # virtue and law follow the verb; moral, justice and util are always 0 in train, so stay 0
    assert fit_predict(task, train, test) == [(1, 0, 0, 0, 0), (0, 0, 1, 0, 0)]


def test_chegeka_answers_like_the_nearest_train_question():
    task = get_task("chegeka")
    train = [
        Example(idx=1, fields={"question": "ЭТА РЕКА впадает в Каспийское море."}, label=("Волга",)),
        Example(idx=2, fields={"question": "ЭТОТ ГОРОД стоит на Неве."}, label=("Санкт-Петербург",)),
    ]
    test = [Example(idx=3, fields={"question": "Какой город стоит на Неве и Охте?"})]
    assert fit_predict(task, train, test) == ["Санкт-Петербург"]


class NoFitting:
    def __init__(self, **_):
        raise AssertionError("refitted")


@pytest.mark.parametrize(("model", "name"), [("tfidf", "rcb"), ("tfidf", "muserc"), ("tfidf-fields", "rcb")])
def test_second_fit_on_the_same_data_loads_the_cached_model(monkeypatch, model, name):
    task = get_task(name)
    train, examples = SAMPLES.load(task, "train").examples, SAMPLES.load(task, "val").examples
    first = fit_predict(task, train, examples, model=model)
    assert len(list(cache_dir("tfidf").glob(f"{name}-*.joblib"))) == 1

    monkeypatch.setattr(features, "TfidfVectorizer", NoFitting)  # every model fits a vectorizer first
    assert fit_predict(task, train, examples, model=model) == first  # loaded, not refitted
    other_label = next(label for label in task.labels if label != train[0].label)
    changed = [replace(train[0], label=other_label), *train[1:]]
    with pytest.raises(AssertionError, match="refitted"):  # other labels -> another key
        fit_predict(task, changed, examples, model=model)
    with pytest.raises(AssertionError, match="refitted"):  # another seed -> another key
        fit_predict(task, train, examples, seed=1, model=model)
    other = VARIANTS[1 - VARIANTS.index(model)]
    with pytest.raises(AssertionError, match="refitted"):  # the other variant is another model on RSG tasks
        fit_predict(task, train, examples, model=other)


def test_split_options_reads_the_inline_options():
    stem, options = split_options(
        "Растения получают энергию для роста (A) из почвы (B) из солнечного света (C) из воды (D) из воздуха"
    )
    assert stem == "Растения получают энергию для роста"
    assert options == {"A": "из почвы", "B": "из солнечного света", "C": "из воды", "D": "из воздуха"}


@pytest.mark.parametrize(
    ("question", "problem"),
    [
        ("Что тяжелее? (A) перо (B) камень (D) лист", r"found \(A\) \(B\) \(D\)"),
        ("Что тяжелее? (A) перо (B) камень (C) (D) лист", r"option \(C\) has no text"),
        ("Что тяжелее: перо или камень?", "found none"),
    ],
)
def test_a_malformed_options_question_is_an_error_naming_the_example(question, problem):
    task = get_task("ru_openbook")
    train = [
        Example(idx=0, fields={"question": "Что легче? (A) перо (B) гиря (C) камень (D) кирпич"}, label="A"),
        Example(idx=7, fields={"question": question}, label="B"),
    ]
    with pytest.raises(RuevalError, match=rf"ru_openbook example 7: .*{problem}"):
        fit_predict(task, train, [])


def test_no_labelled_train_examples_is_an_error():
    task = get_task("danetqa")
    with pytest.raises(RuevalError, match="needs labelled train examples"):
        fit_predict(task, [Example(idx=0, fields={"question": "а?", "passage": "б"})], [])


def test_field_vectors_keep_an_options_own_words_and_its_cosine_with_the_shared_context():
    fields = features.FieldVectors(features.CONFIGS["rsg"]).fit(get_task("rucos"), [("кошка спит дома", "собака спит")])
    inputs = [("кошка спит дома", "собака спит"), ("кошка спит дома", "кошка дома")]
    matrix = fields.transform(inputs, shared=1).toarray()
    vocabulary = len(fields.vectorizer.vocabulary_)
    assert matrix.shape == (2, vocabulary + 1)  # the shared passage's own vector is left out
    vectors = fields.vectorizer.transform([text for pair in inputs for text in pair])
    assert matrix[:, -1] == pytest.approx(
        [cosine_similarity(vectors[0], vectors[1])[0, 0], cosine_similarity(vectors[2], vectors[3])[0, 0]]
    )
    assert matrix[1, -1] > matrix[0, -1] > 0


# ---- the official RSG construction (RussianSuperGLUE's tfidf_baseline scripts) -----------------------


@pytest.mark.parametrize(
    ("name", "fields", "text"),
    [  # the scripts' f-strings, e.g. RUSSE's f"{sentence1} {sentence2} {word}"
        ("terra", {"premise": "Шёл дождь.", "hypothesis": "Было сухо."}, "Шёл дождь. Было сухо."),
        ("rcb", {"premise": "Он ушёл.", "hypothesis": "Его нет."}, "Он ушёл. Его нет."),
        ("lidirus", {"sentence1": "Кот спит.", "sentence2": "Кот не спит."}, "Кот спит. Кот не спит."),
        ("russe", {"word": "ключ", "sentence1": "Бил ключ.", "sentence2": "Дай ключ."}, "Бил ключ. Дай ключ. ключ"),
        (
            "rwsd",
            {"text": "Мама звала дочь.", "target": {"span1_text": "Мама", "span2_text": "дочь"}},
            "Мама звала дочь. Мама дочь",
        ),
        ("danetqa", {"question": "Есть ли у кита зубы?", "passage": "Кит — млекопитающее."}, "Есть ли у кита зубы?"),
        (
            "parus",
            {"premise": "Стекло разбилось.", "question": "cause", "choice1": "Упал мяч.", "choice2": "Шёл снег."},
            "Стекло разбилось. Что было ПРИЧИНОЙ этого? Упал мяч. Шёл снег.",
        ),
        (
            "parus",
            {"premise": "Пошёл дождь.", "question": "effect", "choice1": "Улица намокла.", "choice2": "Было сухо."},
            "Пошёл дождь. Что случилось в РЕЗУЛЬТАТЕ? Улица намокла. Было сухо.",
        ),
    ],
)
def test_a_classification_example_becomes_the_scripts_one_joined_text(name, fields, text):
    assert official.joined_text(get_task(name), Example(idx=0, fields=fields)) == text


def test_danetqa_learns_from_the_question_alone():
    task = get_task("danetqa")
    train = [
        Example(
            idx=i,
            fields={"question": f"Правда ли, что {topic} {verb}?", "passage": f"Текст {i} про абзац."},
            label=label,
        )
        for i, topic in enumerate(TOPICS)
        for verb, label in (("существует", True), ("выдуман", False))
    ]
    solver = make_solver("tfidf")
    solver.fit(task, train)
    vocabulary = set(solver._model.vectorizer.vocabulary_)
    assert {"правда", "существует", "выдуман"} <= vocabulary and not vocabulary & {"текст", "абзац"}
    test = [
        Example(idx=99, fields={"question": f"Правда ли, что {t} {v}?", "passage": "абзац"})
        for t, v in (("ночной рынок", "существует"), ("ночной рынок", "выдуман"))
    ]
    assert solver.predict(task, test) == [True, False]


def muserc_question(passage, group, question, answers, label=None):
    return [
        Example(
            idx=(*group, i),
            fields={"passage": passage, "question": question, "answer": answer},
            label=label,
            group=group,
        )
        for i, answer in enumerate(answers)
    ]


def test_muserc_marks_the_two_answers_closest_to_the_passage_true_in_each_question():
    task = get_task("muserc")
    passage = "Маша поехала в деревню к бабушке. В деревне Маша пекла пироги и поливала огород."
    train = [  # the vectorizer learns the train passages' words
        *muserc_question("Петя читал книгу о море и кораблях.", (0, 0), "Что читал Петя?", ["книгу"], label=1),
        *muserc_question(passage, (1, 0), "Где была Маша?", ["в деревне"], label=1),
    ]
    first = muserc_question(passage, (2, 0), "Что делала Маша?", ["пекла пироги", "летала", "поливала огород", "спала"])
    # no answer has a word of the passage: all are equally far
    second = muserc_question(passage, (2, 1), "Куда поехала Маша?", ["в город", "в горы", "на юг"])
    single = muserc_question(passage, (2, 2), "Кто поехал?", ["Петя"])
    preds = fit_predict(task, train, first + second + single)
    assert preds[:4] == [1, 0, 1, 0]  # the answers sharing the passage's words
    assert preds[4:7] == [0, 1, 1]  # ties go to the later answers, as the script's argsort orders them
    assert preds[7:] == [1]  # a single answer is among the two best


def rucos_query(passage, query, mentions, idx=0):
    return Example(idx=(idx, 0), fields={"passage": passage, "query": query}, candidates=tuple(mentions))


def test_rucos_picks_the_mention_whose_query_is_closest_to_the_passage():
    task = get_task("rucos")
    passage = "Греф возглавил Сбербанк. Греф выступил в Москве. Греф говорил о банках.\n@highlight\nГреф выступил"
    other = "Волгоград принимал футбольный матч.\n@highlight\nМатч в Волгограде"
    train = [
        rucos_query(passage, "@placeholder выступил", ["Греф", "Сбербанк"], 0),
        rucos_query(other, "@placeholder", ["Матч"], 1),
    ]
    solver = make_solver("tfidf")
    solver.fit(task, [replace(example, label=("x",)) for example in train])
    assert "highlight" not in solver._model.vectorizer.vocabulary_  # the scripts join the highlights by spaces
    mentions = ["Москве", "Греф", "Сбербанк", "Греф"]  # mentions repeat, as in RuCoS
    assert solver.predict(task, [rucos_query(passage, "@placeholder рассказал о банках", mentions)]) == ["Греф"]
    # Two words with the same weight in the passage score the same: the later mention wins, as in the script.
    tied = rucos_query(passage, "Новость: @placeholder", ["Сбербанк", "Москве"])
    assert solver.predict(task, [tied, replace(tied, candidates=("Москве", "Сбербанк"))]) == ["Москве", "Сбербанк"]


def test_rucos_without_entities_is_an_error_naming_the_example():
    task = get_task("rucos")
    train = [replace(rucos_query("Греф выступил в Москве.", "@placeholder выступил", ["Греф"]), label=("Греф",))]
    solver = make_solver("tfidf")
    solver.fit(task, train)
    with pytest.raises(RuevalError, match="rucos example 5/0: no entities"):
        solver.predict(task, [rucos_query("Текст без имён.", "@placeholder", [], idx=5)])
