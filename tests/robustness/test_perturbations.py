"""Perturbations: what they change, at what rate, deterministically, and that gold answers stay."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from support import require_modules

require_modules("emoji", extra="emoji")

import emoji

from rueval.core.text import lemma, sentences, tokens, words
from rueval.data import open_data
from rueval.robustness.backends import EngineGenerator, Seq2SeqTranslator
from rueval.robustness.emoji_dictionary import build
from rueval.robustness.perturbations import (
    EMOJI_FILE,
    KEYBOARD_NEIGHBOURS,
    AddSent,
    BackTranslation,
    ButterFingers,
    ChangeCharCase,
    EdaDelete,
    EdaSwap,
    Emojify,
    _deletions,
    emoji_dictionary,
)
from rueval.robustness.spans import apply_edits, token_spans
from rueval.robustness.targets import TARGETS
from rueval.tasks import Example, get_task

WORD_LEVEL = [ButterFingers, Emojify, EdaDelete, EdaSwap, ChangeCharCase]
SAMPLES = open_data(None)
TAPE_TASKS = ("winograd", "ru_openbook", "ru_worldtree", "multiq", "chegeka", "sit_ethics", "per_ethics")

# About 600 words, most with an emoji in the dictionary: enough to measure rates.
LONG_TEXT = " ".join(
    [
        "Утром кошка и собака гуляли в парке у реки, а солнце светило над лесом.",
        "Мальчик взял книгу, яблоко и телефон и поехал на автобусе в школу.",
        "Бабушка испекла торт, налила чай и молоко, а дедушка принёс хлеб и сыр.",
        "Зимой в городе шёл снег, дети лепили снеговика и катались на лыжах у горы.",
        "Врач приехал на машине в больницу, где его ждал учитель с маленьким ребёнком.",
        "Летом мы купили арбуз, виноград и клубнику, а вечером смотрели фильм в кино.",
    ]
    * 10
)


def letters(text: str) -> list[str]:
    return [c for c in text if c.lower() in KEYBOARD_NEIGHBOURS]


def text_example(text: str = LONG_TEXT) -> Example:
    return Example(0, {"text": text, "source": "news"}, (1, 0, 1, 0, 0))


ETHICS = get_task("sit_ethics")


def test_butter_fingers_typos_are_keyboard_neighbours_at_the_configured_rate():
    perturbed = ButterFingers(0.15).perturb(text_example(), ETHICS).fields["text"]
    assert len(perturbed) == len(LONG_TEXT)
    changed = [(a, b) for a, b in zip(LONG_TEXT, perturbed) if a != b]
    assert all(b.lower() in KEYBOARD_NEIGHBOURS[a.lower()] and a.isupper() == b.isupper() for a, b in changed)
    # a struck letter lands on one of its n neighbours or on itself (as in TAPE's key map): n / (n + 1) change
    near = [len(KEYBOARD_NEIGHBOURS[c.lower()]) for c in letters(LONG_TEXT)]
    expected = 0.15 * sum(n / (n + 1) for n in near) / len(near)
    assert 0.13 < expected < 0.14  # RuTransform changes 13.5-14% at p = 0.15 (benchmarks/rutransform_rates.py)
    assert len(changed) / len(letters(LONG_TEXT)) == pytest.approx(expected, abs=0.02)


def test_keyboard_neighbours_are_the_keys_within_two_key_widths():
    assert set(KEYBOARD_NEIGHBOURS["ф"]) == {"й", "ц", "ы", "в", "я", "ч"}
    assert set(KEYBOARD_NEIGHBOURS["п"]) == {"к", "е", "н", "в", "а", "р", "о", "с", "м", "и", "т"}
    assert all(key not in near for key, near in KEYBOARD_NEIGHBOURS.items())
    assert KEYBOARD_NEIGHBOURS["ё"] == KEYBOARD_NEIGHBOURS["е"]


def test_change_char_case_rate():
    perturbed = ChangeCharCase(0.35).perturb(text_example(), ETHICS).fields["text"]
    flipped = sum(a != b and a.swapcase() == b for a, b in zip(LONG_TEXT, perturbed))
    assert perturbed.lower() == LONG_TEXT.lower()
    assert flipped / len(letters(LONG_TEXT)) == pytest.approx(0.35, abs=0.03)


def test_emojify_replaces_dictionary_words_at_the_configured_rate():
    perturbed = Emojify(0.4).perturb(text_example(), ETHICS).fields["text"]
    in_dictionary = sum(lemma(w) in emoji_dictionary() for w in words(LONG_TEXT))
    replaced = len(words(LONG_TEXT)) - len(words(perturbed))  # an emoji is no word
    assert in_dictionary > 300
    assert replaced / in_dictionary == pytest.approx(0.4, abs=0.06)
    assert {"🐈", "🐱", "🐕", "🐶"} & set(perturbed)  # кошка / собака matched through their lemmas
    used = {ch for ch in perturbed if not ch.isspace()} - set(LONG_TEXT)
    assert used <= {ch for emojis in emoji_dictionary().values() for e in emojis for ch in e}


def test_emojify_writes_numbers_as_keycaps_digit_by_digit():
    perturbed = Emojify(1.0).perturb(text_example("Это было в 1930 году."), ETHICS).fields["text"]
    assert "1️⃣9️⃣3️⃣0️⃣" in perturbed


def test_emoji_dictionary_is_built_from_the_cldr_names_and_keywords():
    dictionary = emoji_dictionary()
    assert len(dictionary) > 4000  # CLDR's keywords as well as the names: TAPE's has about 1,900 entries
    assert all(word == word.lower() and "ё" not in word for word in dictionary)  # keys as lemma() gives them
    assert {lemma(w) for w in ("кошки", "России", "солнцем", "собаку")} <= set(dictionary)
    assert {str(d) for d in range(10)} <= set(dictionary)
    assert dictionary["1"] == ["1️⃣"] and "🐱" in dictionary["кошка"] and "☀️" in dictionary["солнце"]
    assert "россия" in dictionary and "в" not in dictionary and "с" not in dictionary  # no prepositions
    assert "👍" in dictionary["хорошо"] and "🐈" in dictionary["питомец"]  # CLDR keywords, not in the names
    assert all(emoji.is_emoji(e) for emojis in dictionary.values() for e in emojis)
    assert "CLDR JSON" in json.loads(EMOJI_FILE.read_text(encoding="utf-8"))["source"]


def cldr_json(root: Path, annotations: dict, derived: dict) -> Path:
    """The two CLDR JSON packages as npm installs them, with the given Russian annotations."""
    for package, file, key, content in (
        ("cldr-annotations-full", "annotations/ru/annotations.json", "annotations", annotations),
        ("cldr-annotations-derived-full", "annotationsDerived/ru/annotations.json", "annotationsDerived", derived),
    ):
        path = root / package / file
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({key: {"identity": {"language": "ru"}, "annotations": content}}), encoding="utf-8")
        (root / package / "package.json").write_text('{"version": "99.1.0"}', encoding="utf-8")
    return root


def test_the_generator_lemmatises_cldr_keywords_of_emojis_only(tmp_path):
    annotations = {
        "🐈": {"default": ["домашний питомец", "коты"], "tts": ["кошка"]},
        "≤": {"default": ["неравенство"]},  # CLDR annotates symbols that are no emoji
        "👍🏻": {"default": ["одобрение"]},  # skin tones repeat their emoji's words
        "🕐": {"default": ["1", "часы"]},  # a number's emojis are its keycaps only
        "☺": {"default": ["улыбочка"]},  # CLDR drops the variation selector
    }
    built = build(cldr_json(tmp_path, annotations, {"🇷🇺": {"default": ["флаг", "Россия"]}}))
    lemmas = built["lemmas"]
    assert {"🐈"} <= set(lemmas["питомец"]) & set(lemmas["домашний"]) & set(lemmas["кот"])
    assert "🇷🇺" in lemmas["россия"] and "☺️" in lemmas["улыбочка"]
    assert "неравенство" not in lemmas and "одобрение" not in lemmas and lemmas["1"] == ["1️⃣"]
    assert "CLDR JSON 99.1.0" in built["source"]


def test_eda_delete_deletes_tokens_punctuation_included_at_the_rate():
    perturbed = EdaDelete(0.3).perturb(text_example(), ETHICS).fields["text"]
    assert 1 - len(tokens(perturbed)) / len(tokens(LONG_TEXT)) == pytest.approx(0.3, abs=0.04)
    assert 1 - len(words(perturbed)) / len(words(LONG_TEXT)) == pytest.approx(0.3, abs=0.04)
    assert perturbed.count(".") < LONG_TEXT.count(".") and "  " not in perturbed  # as TAPE's framework


def test_eda_delete_keeps_at_least_one_word():
    perturbed = EdaDelete(1.0).perturb(text_example("Мама мыла раму."), ETHICS).fields["text"]
    assert len(words(perturbed)) == 1


def test_eda_delete_deletes_a_stopword_in_a_sentence_where_chance_deleted_nothing():
    text = "Мама и папа пошли в парк. Кошка спала на диване."
    perturbed = EdaDelete(0.001).perturb(text_example(text), ETHICS).fields["text"]
    first, second = sentences(perturbed)
    assert first in ("Мама папа пошли в парк.", "Мама и папа пошли парк.") and second == "Кошка спала диване."
    assert EdaDelete(0.0).perturb(text_example(text), ETHICS) is None  # no rate, no deletion


def test_eda_delete_of_an_opening_quote_keeps_the_words_apart():
    text = "Он сказал «привет» вчера."
    spans = token_spans(text)
    quote = next(i for i, (start, end) in enumerate(spans) if text[start:end] == "«")
    after = apply_edits(text, _deletions(spans, {quote}), ())[0]
    assert after == "Он сказал привет» вчера."
    closing = next(i for i, (start, end) in enumerate(spans) if text[start:end] == "»")
    assert apply_edits(text, _deletions(spans, {closing}), ())[0] == "Он сказал «привет вчера."


def test_eda_swap_only_moves_words():
    perturbed = EdaSwap(0.01).perturb(text_example(), ETHICS).fields["text"]  # max(1, p x n) = 1: a swap each
    before, after = words(LONG_TEXT), words(perturbed)
    assert sorted(before) == sorted(after)
    start = 0
    for sentence in sentences(LONG_TEXT):  # words move within their sentence, one pair per sentence
        original = words(sentence)
        swapped, start = after[start : start + len(original)], start + len(original)
        moved = [(a, b) for a, b in zip(original, swapped) if a != b]
        assert len(moved) in (0, 2) and sorted(moved) == sorted((b, a) for a, b in moved)
    assert perturbed != LONG_TEXT


def test_eda_swap_is_one_swap_when_tapes_swap_count_is_odd():
    example = text_example("Мама мыла раму мылом и водой.")  # 7 tokens
    low, high = (EdaSwap(rate).perturb(example, ETHICS).fields["text"] for rate in (0.1, 1.0))  # 1 and 7: odd
    assert low == high and sum(a != b for a, b in zip(words(low), words(example.fields["text"]))) == 2
    assert EdaSwap(0.3).perturb(example, ETHICS) is None  # max(1, 0.3 x 7) = 2 swaps, the second undoing the first
    assert EdaSwap(0.0).perturb(example, ETHICS) is None


@pytest.mark.parametrize("cls", WORD_LEVEL, ids=lambda c: c.name)
def test_same_seed_same_output_other_seed_other_output(cls):
    example = text_example()
    rate = 0.01 if cls is EdaSwap else None  # at its default 0.3 it swaps back in LONG_TEXT's 14-16 tokens
    first, again, other = (cls(rate, seed=s).perturb(example, ETHICS).fields["text"] for s in (0, 0, 1))
    assert first == again != other


@pytest.mark.parametrize("cls", WORD_LEVEL, ids=lambda c: c.name)
def test_an_example_is_perturbed_the_same_alone_or_in_a_batch(cls):
    task = get_task("ru_worldtree")
    examples = SAMPLES.load(task, "test").examples
    batch = cls().perturb_batch(task, examples)
    assert [cls().perturb(e, task) for e in examples[:3]] == batch[:3]


def test_nothing_to_change_gives_none():
    assert Emojify(1.0).perturb(text_example("Всё прошло."), ETHICS) is None  # no dictionary word
    assert EdaSwap(1.0).perturb(text_example("Хорошо."), ETHICS) is None  # one word cannot swap
    assert ButterFingers(0.0).perturb(text_example(), ETHICS) is None


def test_rate_outside_zero_one_is_refused():
    from rueval.core.errors import RuevalError

    with pytest.raises(RuevalError, match="between 0 and 1"):
        ButterFingers(1.5)


@pytest.mark.parametrize("cls", WORD_LEVEL, ids=lambda c: c.name)
@pytest.mark.parametrize("task_name", TAPE_TASKS)
def test_gold_and_other_fields_are_untouched(cls, task_name):
    task = get_task(task_name)
    examples = SAMPLES.load(task, "test").examples
    changed = 0
    repaired = {"bridge_answers", "main_answers"}  # offsets that follow the perturbed text
    for example, perturbed in zip(examples, cls().perturb_batch(task, examples)):
        if perturbed is None:
            continue
        changed += 1
        assert perturbed.label == example.label and perturbed.idx == example.idx
        untouched = set(example.fields) - set(TARGETS[task_name].fields) - repaired
        assert {f: perturbed.fields[f] for f in untouched} == {f: example.fields[f] for f in untouched}
    assert changed > 0


@pytest.mark.parametrize("cls", WORD_LEVEL, ids=lambda c: c.name)
def test_multiple_choice_markers_stay_and_options_are_perturbed_apart(cls):
    task = get_task("ru_openbook")
    perturbed_examples = 0
    for example in SAMPLES.load(task, "test").examples:
        perturbed = cls(1.0).perturb(example, task)
        if perturbed is None:
            continue
        perturbed_examples += 1
        question = perturbed.fields["question"]
        assert re.findall(r"\(([A-D])\)", question) == ["A", "B", "C", "D"]
        assert all(option.strip() for option in re.split(r"\([A-D]\)", question)[1:])  # none emptied
        assert perturbed.label == example.label
    assert perturbed_examples > 0


# --- model based ---------------------------------------------------------------------------------


def test_back_translation_translates_segments_outside_named_entities_and_protected_spans():
    def to_english(texts):
        return [f"EN {t}" for t in texts]

    def to_russian(texts):
        return [t.replace("EN ", "").upper() for t in texts]

    task = get_task("multiq")
    example = SAMPLES.load(task, "test").examples[0]
    perturbed = BackTranslation(to_english, to_russian, rate=1.0).perturb(example, task)
    answer = perturbed.fields["main_answers"][0]
    assert perturbed.fields["main_text"][answer["offset"] : answer["offset"] + answer["length"]] == answer["segment"]

    main = "Вологда — город на севере России. Климат здесь умеренный, зима долгая. Город стоит на реке Вологде."
    fields = {**example.fields, "main_text": main, "main_answers": [{"offset": 91, "length": 7, "segment": "Вологде"}]}
    translated = BackTranslation(to_english, to_russian, rate=1.0).perturb(Example(0, fields, ("Вологде",)), task)
    assert translated.fields["main_text"] == (  # runs of 3+ tokens between the entities; "." alone stays
        "Вологда — ГОРОД НА СЕВЕРЕ России. КЛИМАТ ЗДЕСЬ УМЕРЕННЫЙ, ЗИМА ДОЛГАЯ. ГОРОД СТОИТ НА РЕКЕ Вологде."
    )


def test_back_translation_translates_a_one_sentence_field_whatever_the_rate():
    def upper(texts):
        return [t.upper() for t in texts]

    one = BackTranslation(upper, upper, rate=0.0).perturb(text_example("Мама мыла раму мылом."), ETHICS)
    assert one.fields["text"] == "МАМА МЫЛА РАМУ МЫЛОМ."  # TAPE's framework tosses no coin for one sentence
    assert BackTranslation(upper, upper, rate=0.0).perturb(text_example("Мама мыла раму. Папа спал."), ETHICS) is None


def test_back_translation_rate_is_per_sentence():
    seen = []

    def record(texts):
        seen.extend(texts)
        return texts

    sentences = [f"Предложение номер {i} стоит здесь." for i in range(400)]
    BackTranslation(record, lambda t: t, rate=0.5).perturb(text_example(" ".join(sentences)), ETHICS)
    assert len(seen) / len(sentences) == pytest.approx(0.5, abs=0.07)


@pytest.fixture(scope="session")
def tiny_translator_dir(tmp_path_factory) -> Path:
    """A random one-layer BART with a byte-level BPE tokenizer trained here: real transformers
    seq2seq wiring, no download. It is told to emit a few tokens before it may stop."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    from rueval.models.backends.tiny import sample_texts

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<s>", "</s>", "<unk>"], show_progress=False)
    bpe.train_from_iterator(sample_texts(), trainer)
    specials = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, **specials)
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=512,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=None,
    )
    torch.manual_seed(0)
    model = BartForConditionalGeneration(config)
    model.generation_config.min_new_tokens = 3
    out = tmp_path_factory.mktemp("tiny_bart")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_back_translation_through_a_transformers_seq2seq_model(tiny_translator_dir):
    translate = Seq2SeqTranslator(str(tiny_translator_dir), max_new_tokens=8)
    task = get_task("ru_openbook")
    examples = SAMPLES.load(task, "test").examples[:4]
    runs = [BackTranslation(translate, translate, rate=1.0).perturb_batch(task, examples) for _ in range(2)]
    assert runs[0] == runs[1]
    changed = [p for p in runs[0] if p is not None]
    assert changed and all(isinstance(p.fields["question"], str) for p in changed)
    assert all(re.findall(r"\(([A-D])\)", p.fields["question"]) == ["A", "B", "C", "D"] for p in changed)


def test_add_sent_appends_a_generated_sentence_of_bounded_length(tiny_gpt2_dir):
    generate = EngineGenerator(str(tiny_gpt2_dir), max_new_tokens=12)
    task = get_task("winograd")
    examples = SAMPLES.load(task, "test").examples[:4]
    runs = [AddSent(generate, rate=0.5).perturb_batch(task, examples) for _ in range(2)]
    assert runs[0] == runs[1]
    for example, perturbed in zip(examples, runs[0]):
        assert perturbed is not None
        original = example.fields["text"]
        assert perturbed.fields["text"].startswith(original + " ")
        added = words(perturbed.fields["text"][len(original) :])
        assert 1 <= len(added) <= math.ceil(0.5 * len(words(original)))
        assert perturbed.label == example.label and perturbed.fields["options"] == example.fields["options"]


def test_add_sent_replaces_one_wrong_option_of_a_multiple_choice_question(tiny_gpt2_dir):
    prompts = []

    def generate(texts):
        prompts.extend(texts)
        return ["ответ из генератора. И ещё одно предложение." for _ in texts]

    task = get_task("ru_openbook")
    example = Example(0, {"question": "Что светит днём? (A) луна (B) солнце (C) лампа (D) звезда", "answer": "B"}, "B")
    perturbed = AddSent(generate, rate=1.0).perturb(example, task)
    options = re.split(r" ?\([A-D]\) ", perturbed.fields["question"])[1:]
    assert prompts == ["Что светит днём?"]
    assert options[1] == "солнце" and perturbed.label == "B"  # the gold option is never replaced
    assert sum(option != old for option, old in zip(options, ["луна", "солнце", "лампа", "звезда"])) == 1
    assert "ответ" in options  # cut to p x the words of the option it replaces (one word)
    real = AddSent(EngineGenerator(str(tiny_gpt2_dir), max_new_tokens=12), rate=1.0).perturb(example, task)
    assert re.findall(r"\(([A-D])\)", real.fields["question"]) == ["A", "B", "C", "D"]


# --- TAPE's framework's rates (benchmarks/rutransform_rates.py) ---------------------------------

RESULTS = Path(__file__).parents[2] / "benchmarks" / "results"
LETTERS = re.compile(r"[^\W\d_]+")


def changed_letters(line: str, out: str) -> tuple[int, int]:
    return sum(a != b for a, b in zip(line, out)), sum(map(str.isalpha, line))


def replaced_dictionary_words(line: str, out: str) -> tuple[int, int]:
    eligible = sum(lemma(word) in emoji_dictionary() for word in LETTERS.findall(line))
    return len(LETTERS.findall(line)) - len(LETTERS.findall(out)), eligible


RATE_MEASURES = {
    "butter_fingers": (ButterFingers, changed_letters),
    "change_char_case": (ChangeCharCase, changed_letters),
    "emojify": (Emojify, replaced_dictionary_words),
    "eda_delete": (EdaDelete, lambda line, out: (len(tokens(line)) - len(tokens(out)), len(tokens(line)))),
    "eda_swap": (EdaSwap, lambda line, out: (int(out != line), 1)),
}


@pytest.mark.parametrize("name", RATE_MEASURES)
def test_rates_on_the_docs_inputs_stay_within_a_tenth_of_rutransforms(name):
    recorded = json.loads((RESULTS / "rutransform_rates.json").read_text(encoding="utf-8"))["results"]
    theirs = {row["perturbation"]: row["rutransform"] for row in recorded if row["measure"] != "words replaced"}
    lines = (RESULTS / "rutransform_inputs.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(set(lines)) == 1000
    cls, measure = RATE_MEASURES[name]
    changed = total = 0
    for i, line in enumerate(lines):
        perturbed = cls(seed=7).perturb(Example(i, {"text": line}, (0, 0, 0, 0, 0)), ETHICS)
        counts = measure(line, line if perturbed is None else perturbed.fields["text"])
        changed, total = changed + counts[0], total + counts[1]
    assert changed / total == pytest.approx(theirs[name], rel=0.1)
