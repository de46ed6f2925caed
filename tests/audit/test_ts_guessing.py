"""The guessing test (TS-Guessing): which option each kind of choice task hides, chance and the permutation
p-value against their definitions, a real tiny GPT-2's guesses asked through the engine, and a tiny GPT-2
that has read the items writing their hidden options where its untrained twin writes none."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from rueval.audit.guessing import MASK, Guess, masked_items, permutation_test, ts_guessing
from rueval.core.errors import RuevalError
from rueval.data import open_data
from rueval.scoring.metrics import normalize_answer
from rueval.tasks import get_task

INLINE_TASKS = ("ru_openbook", "ru_worldtree")


def examples(task: str, split: str = "test"):
    return open_data(None).load(get_task(task), split).examples


@pytest.mark.parametrize("task", INLINE_TASKS)
def test_an_inline_item_hides_one_wrong_option_and_shows_the_rest(task):
    items = masked_items(get_task(task), examples(task))
    assert len(items) == len(examples(task))
    for item, example in zip(items, examples(task), strict=True):
        stem, options = get_task(task).question_options(example.fields["question"], "question")
        assert item.letter != example.label and item.hidden == options[item.letter]
        prompt = item.prompt()
        assert prompt.count(MASK) == 2  # named in the instruction, and in the item
        assert prompt.endswith(f"({item.letter})")  # the item again, up to the hidden option's mark
        shown = [text for letter, text in options.items() if letter != item.letter]
        assert all(text in prompt for text in shown)
    assert masked_items(get_task(task), examples(task), seed=1) != items  # another seed, other options hidden


def test_option_fields_and_muserc_answers_hide_a_wrong_one():
    parus = examples("parus", "val")
    for item, example in zip(masked_items(get_task("parus"), parus), parus, strict=True):
        assert item.hidden == example.fields["choice1" if example.label == 1 else "choice2"]
        assert item.prompt().endswith(f"{item.letter})")
    muserc = examples("muserc", "val")
    items = masked_items(get_task("muserc"), muserc)
    wrong = {example.group: set() for example in muserc}
    for example in muserc:
        if example.label == 0:
            wrong[example.group].add(example.fields["answer"])
    assert items and all(item.hidden in wrong[item.idx] for item in items)
    assert len(items) == sum(1 for answers in wrong.values() if answers)


def test_unlabelled_items_and_tasks_without_options_are_left_out():
    unlabelled = [replace(example, label=None) for example in examples("ru_openbook")]
    assert masked_items(get_task("ru_openbook"), unlabelled) == []
    with pytest.raises(RuevalError, match="task rucos: the guessing test hides a wrong option of a choice task"):
        masked_items(get_task("rucos"), examples("rucos", "val"))


def test_chance_is_the_mean_over_every_pairing_and_p_counts_pairings_as_good():
    hidden = ["ртуть", "соль", "нет", "нет", "Соль!", "да"]
    said = ["ртуть", "нет", "нет", "да", "соль", "кислород"]
    guesses = [Guess(i, "B", h, g) for i, (h, g) in enumerate(zip(hidden, said, strict=True))]
    chance, p = permutation_test(guesses, 2000, seed=0)
    pairs = [normalize_answer(g) == normalize_answer(h) for g in said for h in hidden]
    assert chance == pytest.approx(sum(pairs) / len(pairs))
    assert 0 < p < 1
    every_one_right = [Guess(i, "B", f"вариант {i}", f"Вариант {i}.") for i in range(12)]
    chance, p = permutation_test(every_one_right, 999, seed=0)
    assert (chance, p) == (pytest.approx(1 / 12), pytest.approx(1 / 1000))  # no re-pairing matches all 12
    same = [Guess(i, "B", "нет", "нет") for i in range(5)]
    assert permutation_test(same, 99, seed=0) == (1.0, 1.0)  # generic answers: as good as chance


@pytest.mark.slow
def test_guesses_are_asked_through_the_engine_cut_at_their_stops_and_cached(tiny_gpt2_dir):
    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.engine import Engine

    engine = Engine(HFCausalLM(str(tiny_gpt2_dir)))
    task, asked = get_task("ru_openbook"), examples("ru_openbook")
    first = ts_guessing(engine, task, asked, permutations=99)
    assert engine.computed == len(first.guesses) == len(asked)
    assert ts_guessing(engine, task, asked, permutations=99) == first
    assert engine.computed == len(asked)  # the second time from the engine's results, none computed
    for guess, item in zip(first.guesses, masked_items(task, asked), strict=True):
        assert guess.hidden == item.hidden and not any(stop in guess.guess for stop in item.stop)


@pytest.mark.slow
def test_a_model_that_has_read_the_items_writes_their_hidden_options_and_its_untrained_twin_does_not(
    tiny_gpt2_dir, tmp_path
):
    """The tiny GPT-2 trained on the items' own texts where the test shows them: after the backend's start
    token and the test's instruction (a model this small, with learned positions, recalls a text only where
    it read it), then asked through the engine."""
    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.backends.tiny import EOS, train_tiny_model
    from rueval.models.engine import Engine

    task, asked = get_task("ru_openbook"), examples("ru_openbook")
    items = masked_items(task, asked)
    texts = [EOS + item.prompt() + item.text[item.span[0] :] for item in items]  # EOS: hf:'s start token
    trained = train_tiny_model(shutil.copytree(tiny_gpt2_dir, tmp_path / "read"), texts, 400, max_length=512)
    untrained = ts_guessing(Engine(HFCausalLM(str(tiny_gpt2_dir))), task, asked, permutations=999)
    read = ts_guessing(Engine(HFCausalLM(str(trained))), task, asked, permutations=999)
    assert read.rate is not None and untrained.rate is not None and read.rate >= untrained.rate + 0.5
    assert read.chance is not None and read.rate > read.chance
    assert read.p_value is not None and read.p_value < 0.01 and untrained.p_value == 1.0
