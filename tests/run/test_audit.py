import json
import math
import random
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity
from support import write_jsonl

import rueval.audit.dataset_audit
import rueval.audit.duplicates
from rueval.audit.dataset_audit import _lemmatised, audit, expected_weighted_random_accuracy, label_distribution
from rueval.audit.duplicates import CharNgramVectors, SplitInputs, _rows_by_text, input_text, similar_pairs
from rueval.core.text import lemmas
from rueval.data import Split
from rueval.results import AuditResult
from rueval.scoring.metrics import normalize_answer
from rueval.scoring.task_scores import score_task
from rueval.solvers.heuristics import NO_RULE, RULES, HeuristicSolver, coverage
from rueval.tasks import Example, get_task


def rcb(idx, premise, hypothesis, label=None):
    record = {"idx": idx, "premise": premise, "hypothesis": hypothesis}
    return record if label is None else {**record, "label": label}


TRAIN = [
    rcb(
        0,
        "Вчера вечером в Самаре прошёл большой концерт симфонического оркестра под открытым небом на набережной Волги.",
        "В Самаре был концерт.",
        "entailment",
    ),
    rcb(
        1,
        "Учёные Томского университета обнаружили в архиве неизвестные письма известного поэта "
        "девятнадцатого века и готовят их к публикации.",
        "Письма поэта нашли в архиве.",
        "entailment",
    ),
    rcb(2, "Бабушка испекла пирог с яблоками и угостила соседей.", "Соседи попробовали пирог.", "entailment"),
    rcb(3, "Поезд из Москвы прибыл в Казань точно по расписанию.", "Поезд пришёл вовремя.", "entailment"),
    rcb(4, "Футбольная команда выиграла финальный матч со счётом три — один.", "Команда победила.", "entailment"),
    # the planted artifact: every contradiction, and nothing else, mentions a cat (in three forms)
    rcb(5, "Мальчик сказал, что видел во дворе кошки соседа.", "Во дворе не было животных.", "contradiction"),
    rcb(6, "Девочка уверяла, будто накормила кошку молоком.", "Девочка ничего не давала.", "contradiction"),
    rcb(7, "Хозяин утверждал, что гулял с кошкой по парку.", "Хозяин весь день сидел дома.", "contradiction"),
    rcb(8, "Директор школы объявил о начале ремонта спортивного зала.", "Ремонт продлится месяц.", "neutral"),
    rcb(9, "Туристы поднялись на вершину горы к обеду.", "Туристы устали.", "neutral"),
]
VAL = [
    # train 0 again, up to case and punctuation: an exact duplicate
    rcb(
        100,
        "вчера вечером в самаре прошёл большой концерт симфонического оркестра под открытым небом на набережной волги",
        "В Самаре был концерт!",
        "entailment",
    ),
    # train 1 with one word changed: a near duplicate
    rcb(
        101,
        "Учёные Томского университета нашли в архиве неизвестные письма известного поэта "
        "девятнадцатого века и готовят их к публикации.",
        "Письма поэта нашли в архиве.",
        "contradiction",
    ),
    rcb(102, "Рыбак утверждал, что поймал огромную щуку.", "Рыбак ничего не поймал.", "contradiction"),
    rcb(103, "Студенты готовятся к экзамену по истории.", "Экзамен будет трудным.", "neutral"),
    rcb(104, "В парке высадили двести молодых лип.", "Липы приживутся.", "neutral"),
]
TEST = [  # unlabelled, as RSG's test sets are
    rcb(200, "Поезд из Москвы прибыл в Казань точно по расписанию.", "Поезд пришёл вовремя."),
    rcb(201, "Весной на реке начался ледоход.", "Лёд тронулся."),
]


@pytest.fixture
def rcb_dir(tmp_path: Path) -> Path:
    for split, records in (("train", TRAIN), ("val", VAL), ("test", TEST)):
        write_jsonl(tmp_path / "data" / "RCB" / f"{split}.jsonl", records)
    return tmp_path / "data"


@pytest.fixture
def report(rcb_dir: Path, tmp_path: Path) -> dict:
    return audit([get_task("rcb")], str(rcb_dir), tmp_path / "out").to_json()["tasks"]["rcb"]


def test_label_shares_are_counted_per_labelled_split(report):
    assert report["labels"]["train"] == {
        "entailment": {"count": 5, "share": 0.5},
        "contradiction": {"count": 3, "share": 0.3},
        "neutral": {"count": 2, "share": 0.2},
    }
    assert {label: row["share"] for label, row in report["labels"]["val"].items()} == {
        "entailment": 0.2,
        "contradiction": 0.4,
        "neutral": 0.4,
    }
    assert "test" not in report["labels"] and "test has no gold labels" in report["notes"]


def test_prior_only_scores_are_exact(report):
    prior = report["prior_only"]["val"]
    # majority = entailment, right on 1 of 5; macro-F1 = (1/3 + 0 + 0) / 3
    assert prior["majority"]["metrics"] == {"avg_f1": pytest.approx(100 / 9), "accuracy": pytest.approx(20.0)}
    # 0.5 * 0.2 + 0.3 * 0.4 + 0.2 * 0.4
    assert prior["weighted_random_expected_accuracy"] == pytest.approx(30.0)
    assert prior["balanced_expected_accuracy"] == pytest.approx(100 / 3)
    assert list(report["prior_only"]) == ["val"]  # the unlabelled test split cannot be scored


def test_planted_artifact_word_tops_its_label(report):
    top = report["artifacts"]["contradiction"][0]
    # in all 3 contradictions and nowhere else: chi2 = (3 - 0.9)^2 / 0.9 + 2.1^2 / 2.1
    assert top == {"lemma": "кошка", "chi2": pytest.approx(7.0), "count": 3, "total": 3}
    assert len(report["artifacts"]["entailment"]) <= 10
    for label in ("entailment", "neutral"):
        assert "кошка" not in [row["lemma"] for row in report["artifacts"][label]]


def test_exact_and_near_duplicates_are_found(report):
    val = report["duplicates"]["val"]
    assert val["exact_pairs"] == [{"train": 0, "eval": 100, "similarity": 1.0}]
    assert [(pair["train"], pair["eval"]) for pair in val["near_pairs"]] == [(1, 101)]
    assert 0.9 <= val["near_pairs"][0]["similarity"] < 1.0
    assert (val["exact"], val["near"], val["eval_with_exact"], val["eval_with_near"]) == (1, 1, 1, 1)
    # an unlabelled test split is still checked for copies of train
    test = report["duplicates"]["test"]
    assert test["exact_pairs"] == [{"train": 3, "eval": 200, "similarity": 1.0}] and test["near_pairs"] == []


def test_heuristic_coverage_rows_for_each_labelled_split(report, rcb_dir):
    from rueval.data import open_data

    task = get_task("rcb")
    val = open_data(str(rcb_dir)).load(task, "val")
    assert set(report["heuristics"]) == {"train", "val"}
    rows = report["heuristics"]["val"]["rules"]
    assert [row["name"] for row in rows] == [rule.name for rule in RULES["rcb"]] + [NO_RULE]
    assert rows == [json.loads(json.dumps(asdict(row))) for row in coverage(task, val.examples)]


def test_audit_json_is_written(rcb_dir, tmp_path):
    written = audit([get_task("rcb")], str(rcb_dir), tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "audit.json").read_text(encoding="utf-8"))
    assert saved == json.loads(json.dumps(written.to_json()))
    assert AuditResult.read(tmp_path / "out" / "audit.json") == written  # read back through the checked schema
    assert saved["tasks"]["rcb"]["duplicates"]["val"]["exact"] == 1
    assert saved["leakage"]["tasks"] == {"rcb": "val"}
    assert saved["leakage"]["weighted_random_expected_accuracy"] == pytest.approx(30.0)


@pytest.mark.parametrize(("suffix_share", "query_chunk"), [(0.75, 1024), (0.2, 7)])  # loose and tight bounds
def test_pruned_similarity_search_finds_every_pair_brute_force_finds(monkeypatch, suffix_share, query_chunk):
    monkeypatch.setattr(rueval.audit.duplicates, "SUFFIX_SHARE", suffix_share)
    monkeypatch.setattr(rueval.audit.duplicates, "QUERY_CHUNK", query_chunk)
    rng = random.Random(0)
    vocabulary = "кот пёс дом лес река гора город поле снег дождь ветер мост окно дверь стол книга".split()
    vocabulary += [f"{stem}{ending}" for stem in ("слов", "лист", "звон") for ending in ("о", "а", "ом", "ами")]

    def sentence():
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 12)))

    def edit(text):
        words = text.split()
        words[rng.randrange(len(words))] = rng.choice(vocabulary)
        return " ".join(words)

    index_texts = [sentence() for _ in range(150)]
    query_texts = [edit(rng.choice(index_texts)) if rng.random() < 0.5 else sentence() for _ in range(80)]
    vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), dtype=np.float32).fit_transform(
        index_texts + query_texts
    )
    index, queries = vectors[:150], vectors[150:]
    brute = cosine_similarity(queries.astype(np.float64), index.astype(np.float64))
    for threshold in (0.9, 0.6):
        rows, columns, similarities = similar_pairs(queries, index, threshold)
        assert set(zip(rows.tolist(), columns.tolist())) == set(zip(*np.nonzero(brute >= threshold)))
        assert similarities == pytest.approx(brute[rows, columns], abs=1e-5)


def test_char_ngram_vectors_are_scikit_learns_char_wb_tfidf():
    texts = [
        "Кот  спит.\nКот спит на печке!",
        "я и он",
        "",
        "Длинноеслово, короткое: да; ДА — нет?",
        "кот спит на печке",
        "печке на спит кот кот",
    ]
    expected = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5)).fit_transform(texts)
    built = CharNgramVectors(texts).rows(range(len(texts)))
    # columns come in another order: compare what the search uses, every cosine
    assert cosine_similarity(built) == pytest.approx(cosine_similarity(expected), abs=1e-6)
    assert sorted(built.getnnz(axis=1)) == sorted(expected.getnnz(axis=1))
    assert sorted(built.data.tolist()) == pytest.approx(sorted(expected.data.tolist()), abs=1e-6)


def test_duplicates_found_chunk_by_chunk_are_those_found_at_once(monkeypatch, rcb_dir, tmp_path):
    whole = audit([get_task("rcb")], str(rcb_dir), tmp_path / "whole").tasks["rcb"].duplicates
    monkeypatch.setattr(rueval.audit.duplicates, "SEARCH_CHUNK", 1)  # every train text searched alone
    chunked = audit([get_task("rcb")], str(rcb_dir), tmp_path / "chunked").tasks["rcb"].duplicates
    assert chunked == whole and whole["val"]["near"] == 1


@pytest.mark.slow  # spawns a process
def test_duplicates_searched_in_a_second_process_equal_those_searched_inline(monkeypatch, rcb_dir, tmp_path):
    inline = audit([get_task("rcb")], str(rcb_dir), tmp_path / "inline").to_json()["tasks"]["rcb"]
    monkeypatch.setattr(rueval.audit.dataset_audit, "BESIDE_MIN_EXAMPLES", 1)
    monkeypatch.setattr(rueval.audit.dataset_audit.os, "cpu_count", lambda: 2)
    # the search vectorises in a spawned process, which imports rueval.audit.duplicates afresh
    monkeypatch.setattr(rueval.audit.duplicates, "CharNgramVectors", not_in_this_process)
    apart = audit([get_task("rcb")], str(rcb_dir), tmp_path / "apart").to_json()["tasks"]["rcb"]
    assert apart == inline and inline["duplicates"]["val"]["near"] == 1


def not_in_this_process(*args):
    raise AssertionError("the near-duplicate search ran in the auditing process")


def test_muserc_texts_processed_part_by_part_match_the_joined_text():
    task = get_task("muserc")
    passage = "Кот Василий жил у бабушки. Он любил молоко, а зимой спал на печке."
    answers = [("Кто такой Василий?", "Кот!"), ("Где спал кот?", "На печке."), ("Где спал кот?", "В сарае")]
    examples = [
        Example((0, 0, k), {"passage": passage, "question": q, "answer": a}, k % 2, group=(0, 0))
        for k, (q, a) in enumerate(answers)
    ]
    # the passage is lemmatised and normalised once for its three answers, with the joined text's result
    assert _lemmatised(task, examples) == [lemmas(input_text(task, example)) for example in examples]
    rows = _rows_by_text(SplitInputs.of(Split(task, "val", examples, "val.jsonl", "")))
    assert rows == {normalize_answer(input_text(task, example)): [k] for k, example in enumerate(examples)}


def test_lidirus_is_audited_against_terra_train(tmp_path):
    terra = [
        {"idx": 0, "premise": "Кот спит на тёплой печке.", "hypothesis": "Кот спит.", "label": "entailment"},
        {"idx": 1, "premise": "Дети играют в снежки.", "hypothesis": "Дети в школе.", "label": "not_entailment"},
        {"idx": 2, "premise": "Магазин закрылся на ремонт.", "hypothesis": "Магазин закрыт.", "label": "entailment"},
    ]
    lidirus = [
        {"idx": 0, "sentence1": "Кот спит на тёплой печке.", "sentence2": "Кот спит.", "label": "entailment"},
        {"idx": 1, "sentence1": "Птица вьёт гнездо.", "sentence2": "Птица летит на юг.", "label": "not_entailment"},
    ]
    write_jsonl(tmp_path / "data" / "TERRa" / "train.jsonl", terra)
    write_jsonl(tmp_path / "data" / "LiDiRus" / "LiDiRus.jsonl", lidirus)
    report = audit([get_task("lidirus")], str(tmp_path / "data"), tmp_path / "out").to_json()["tasks"]["lidirus"]
    assert report["splits"]["train"]["file"].endswith("train.jsonl") and "TERRa" in report["splits"]["train"]["file"]
    # the copy is found although TERRa names its fields premise/hypothesis and LiDiRus sentence1/sentence2
    assert report["duplicates"]["test"]["exact_pairs"] == [{"train": 0, "eval": 0, "similarity": 1.0}]
    assert report["prior_only"]["test"]["weighted_random_expected_accuracy"] == pytest.approx(50.0)  # 2/3*1/2 + 1/3*1/2
    assert "train is terra's train split" in report["notes"][0]
    assert set(report["heuristics"]) == {"train", "test"}


def test_multilabel_expectation_is_averaged_over_categories():
    task = get_task("per_ethics")
    train = [Example(i, {}, label) for i, label in enumerate([(1, 0, 0, 0, 0), (1, 1, 0, 0, 0), (0,) * 5, (0,) * 5])]
    evaluated = [Example(i, {}, label) for i, label in enumerate([(1, 1, 0, 0, 0), (0, 1, 0, 0, 1)])]
    # per category: 0.5*0.5 + 0.5*0.5, 0.25*1, 1, 1, 1*0.5
    assert expected_weighted_random_accuracy(task, train, evaluated) == pytest.approx((0.5 + 0.25 + 1 + 1 + 0.5) / 5)
    shares = label_distribution(task, evaluated)
    assert shares["per_util"] == {"1": {"count": 1, "share": 0.5}, "0": {"count": 1, "share": 0.5}}


def test_span_tasks_report_answer_lengths():
    golds = [("Волга",), ("Чёрное море", "Черное море"), ("Александр Сергеевич Пушкин",)]
    examples = [Example(i, {}, gold) for i, gold in enumerate(golds)]
    assert label_distribution(get_task("chegeka"), examples) == {
        "answer_words": {"mean": 2.0, "median": 2, "min": 1, "max": 3}
    }


def test_cli_audit_on_the_bundled_samples_reproduces_the_balanced_baseline(cli, tmp_path):
    result = cli("audit", "-t", "rsg", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "Label distribution" in result.output and "Train/eval duplicates" in result.output
    leakage = json.loads((tmp_path / "out" / "audit.json").read_text(encoding="utf-8"))["leakage"]
    # the six RSG tasks scored by accuracy; balanced labels expect (1/3 + 5 * 1/2) / 6 = 0.472, as in the paper
    assert set(leakage["tasks"]) == {"rcb", "parus", "terra", "russe", "rwsd", "danetqa"}
    assert leakage["balanced_expected_accuracy"] == pytest.approx(47.22, abs=0.01)


def test_cli_audit_with_a_bad_data_path_exits_2(cli, tmp_path):
    result = cli("audit", "-t", "rcb", "--data", tmp_path / "nowhere", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert "no such directory" in result.output
    assert not (tmp_path / "out").exists()


def test_a_near_duplicate_in_two_evaluation_splits_is_listed_in_each():
    task = get_task("rcb")

    def split(name, records):
        examples = [Example(r["idx"], r, r.get("label")) for r in records]
        return Split(task, name, examples, f"{name}.jsonl", "")

    near_copy = {**VAL[1], "idx": 300}
    found = rueval.audit.duplicates.duplicates(
        split("train", TRAIN), [split("val", VAL), split("test", [*TEST, near_copy])]
    )
    val_pairs, test_pairs = found["val"]["near_pairs"], found["test"]["near_pairs"]
    assert [(p["train"], p["eval"]) for p in val_pairs] == [(1, 101)]
    assert [(p["train"], p["eval"]) for p in test_pairs] == [(1, 300)]
    assert test_pairs[0]["similarity"] == val_pairs[0]["similarity"] < 1
    assert found["test"]["exact_pairs"] == [{"train": 3, "eval": 200, "similarity": 1.0}]


def test_task_health_gives_the_baselines_levels_and_the_official_test_sets_effect(report, rcb_dir):
    from rueval.data import open_data

    health = report["health"]
    assert (health["split"], health["n"]) == ("val", len(VAL))  # the labelled split `rueval run` scores
    assert health["chance_accuracy"] == pytest.approx(100 / 3)
    assert health["majority"] == pytest.approx((100 / 9 + 20) / 2)  # avg F1 and accuracy, as prior_only has them
    task, source = get_task("rcb"), open_data(str(rcb_dir))
    heuristic = HeuristicSolver(seed=0)
    heuristic.fit(task, source.load(task, "train").examples)
    predictions = heuristic.predict(task, source.load(task, "val").examples)
    golds = [record["label"] for record in VAL]
    assert health["heuristic"] == pytest.approx(score_task(task, source.load(task, "val").examples, predictions).score)
    # the majority (entailment) is right on the first val item only
    assert health["every_baseline_right"] == pytest.approx(100 * (predictions[0] == golds[0]) / len(VAL))
    z_a, z_b = norm.ppf(0.975), norm.ppf(0.8)
    d, p_d = health["minimum_detectable_effect"] / 100, health["discordance"]
    assert health["official_test_records"] == 348 and p_d == 0.5
    assert (z_a * math.sqrt(p_d) + z_b * math.sqrt(p_d - d**2)) ** 2 / d**2 == pytest.approx(348, abs=1e-6)
