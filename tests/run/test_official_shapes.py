"""Made-up items of every shape the official files hold: multiple-choice questions with three,
four and five inline options (RuWorldTree has (A)-(E) items), and RUSSE offsets in each of the
official conventions. Each loads, runs with the baselines and goes through `rueval perturb`."""

from __future__ import annotations

import json

import pytest
from support import read_jsonl, write_jsonl

from rueval.data import open_data
from rueval.tasks import get_task
from rueval.tasks.offsets import word_span

QUESTIONS = [
    ("Что проводит ток? (A) дерево (B) стекло (C) медь (D) резина (E) воздух", "C"),
    ("Какое животное млекопитающее? (A) акула (B) кит (C) окунь (D) краб (E) кальмар", "E"),
    ("Что тонет в воде? (A) пробка (B) камень (C) лёд", "B"),
    ("Где встаёт Солнце? (A) на западе (B) на севере (C) на юге (D) на востоке", "D"),
    ("Из чего состоит лёд? (A) из воды (B) из соли (C) из песка (D) из глины", "A"),
    ("Сколько лап у паука? (A) шесть (B) восемь", "B"),
]


def science_qa(folder, task: str) -> None:
    records = [{"question": q, "answer": a, "ID": str(i)} for i, (q, a) in enumerate(QUESTIONS * 3)]
    for split in ("train", "test"):
        write_jsonl(folder / "dummy" / "raw" / task / f"{split}.jsonl", records)


RUSSE_SENTENCES = [  # (word, sentence, start, end) in the official conventions
    ("марка", "Дедушка собирал почтовые марки", 25, 31),  # one past the sentence's end
    ("марка", "Эта марка, увы, редкая.", 4, 10),  # one past the word, over a comma
    ("марка", "Новая марка автомобиля", 6, 10),  # one short of the word
    ("марка", "Марка стоит дорого.", 0, 5),  # at the word
    ("звание", "Ему дали звание майора", 8, 14),
    ("звание", "Какое у него звание?", 14, 21),  # starting on the word's second letter
]


def russe(folder) -> list[dict]:
    records = []
    for i, (word, first, start1, end1) in enumerate(RUSSE_SENTENCES):
        _, second, start2, end2 = RUSSE_SENTENCES[(i + 3) % len(RUSSE_SENTENCES)]
        records.append(
            {"idx": i, "word": word, "sentence1": first, "sentence2": second, "label": i % 2 == 0}
            | {"start1": start1, "end1": end1, "start2": start2, "end2": end2}
        )
    for split in ("train", "val"):
        write_jsonl(folder / "RUSSE" / f"{split}.jsonl", records)
    return records


@pytest.mark.parametrize("model", ["majority", "random", "weighted-random", "tfidf"])
def test_multiple_choice_items_with_any_number_of_options_run_and_are_answered_by_their_own_letters(
    cli, tmp_path, model
):
    for task in ("ru_worldtree", "ru_openbook"):
        science_qa(tmp_path / "data", task)
    out = tmp_path / "out"
    result = cli("run", "-m", model, "-t", "ru_worldtree,ru_openbook", "--data", tmp_path / "data", "-o", out)
    assert result.exit_code == 0, result.output
    for task in ("ru_worldtree", "ru_openbook"):
        lines = read_jsonl(out / "predictions" / f"{task}.jsonl")
        assert len(lines) == len(QUESTIONS) * 3
        for line, (question, gold) in zip(lines, QUESTIONS * 3, strict=True):
            offered = "ABCDE"[: question.count(" (")]
            assert line["gold"] == gold and line["prediction"] in offered
    if model == "tfidf":  # trained on the same items, it answers each, (E) included
        lines = read_jsonl(out / "predictions" / "ru_worldtree.jsonl")
        assert [line["prediction"] for line in lines] == [line["gold"] for line in lines]
        scores = json.loads((out / "results.json").read_text(encoding="utf-8"))["tasks"]["ru_worldtree"]
        assert scores["metrics"]["macro_f1"] == 100.0


def test_five_option_items_are_perturbed_with_every_option_kept(cli, tmp_path):
    science_qa(tmp_path / "data", "ru_worldtree")
    out = tmp_path / "perturbed"
    result = cli("perturb", "-t", "ru_worldtree", "--data", tmp_path / "data", "-o", out)
    assert result.exit_code == 0, result.output
    copies = [r for r in read_jsonl(out / "ru_worldtree" / "test.jsonl") if r["perturbation"] != "ru_worldtree"]
    assert copies
    for copy in copies:
        original = QUESTIONS[int(copy["ID"]) % len(QUESTIONS)][0]
        assert copy["question"].count(" (") == original.count(" (")  # every option is still there


def test_a_gold_letter_the_question_does_not_offer_names_file_line_and_field(cli, tmp_path):
    science_qa(tmp_path / "data", "ru_worldtree")
    test = tmp_path / "data" / "dummy" / "raw" / "ru_worldtree" / "test.jsonl"
    write_jsonl(test, [{"question": QUESTIONS[3][0], "answer": "D"}, {"question": QUESTIONS[3][0], "answer": "E"}])
    result = cli("run", "-t", "ru_worldtree", "--data", tmp_path / "data", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert f"{test}:2: field 'answer': answer 'E' is none of the question's options (A) (B) (C) (D)" in result.stderr


@pytest.mark.parametrize("model", ["majority", "heuristic", "tfidf"])
def test_russe_offsets_in_every_convention_run(cli, tmp_path, model):
    russe(tmp_path / "data")
    result = cli("run", "-m", model, "-t", "russe", "--data", tmp_path / "data", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert len(read_jsonl(tmp_path / "out" / "predictions" / "russe.jsonl")) == len(RUSSE_SENTENCES)


def test_russe_offsets_in_every_convention_are_perturbed_and_read_back(cli, tmp_path):
    records = russe(tmp_path / "data")
    out = tmp_path / "perturbed"
    result = cli("perturb", "-t", "russe", "--split", "val", "--data", tmp_path / "data", "-o", out)
    assert result.exit_code == 0, result.output
    written = open_data(str(out)).load_perturbed(get_task("russe"), "val")
    assert written is not None and all(written.perturbed.values())
    for copies in written.perturbed.values():
        for copy in copies:
            original = records[copy.fields["idx"]]
            for n in (1, 2):
                text, start, end = (copy.fields[f] for f in (f"sentence{n}", f"start{n}", f"end{n}"))
                word = word_span(text, start, end)
                before = word_span(*(original[f] for f in (f"sentence{n}", f"start{n}", f"end{n}")))
                assert word is not None and before is not None
                # the record's convention kept: the offsets lie as they did around the word
                shift = (original[f"start{n}"] - before[0], original[f"end{n}"] - before[1])
                assert (start - word[0], end - word[1]) == shift
