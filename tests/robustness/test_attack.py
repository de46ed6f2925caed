"""Attack success rate, semantic filtering, perturbed data in the episodes layout, and the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from support import read_jsonl, require_modules, write_jsonl

from rueval.core.errors import DataError
from rueval.data import open_data
from rueval.data.local import SAMPLES_DIR
from rueval.report.leaderboard import format_score
from rueval.results import RobustnessSummary
from rueval.robustness.attack import pair_with_originals, score_perturbation
from rueval.robustness.perturbations import BackTranslation, Perturbation
from rueval.robustness.semantic_filter import (
    BertScore,
    CharNgramSimilarity,
    SemanticFilter,
    Similarity,
    choose_similarity,
)
from rueval.robustness.spans import Edit
from rueval.robustness.targets import applies, protected_spans_batch
from rueval.run.robustness import Robustness
from rueval.run.spec import RobustnessOptions
from rueval.scoring.task_scores import is_correct
from rueval.tasks import Example, get_task

WORD_LEVEL_NAMES = ("butter_fingers", "emojify", "eda_delete", "eda_swap", "change_char_case")


def test_correct_means_gold_class_all_categories_or_exact_match():
    assert is_correct(get_task("winograd"), 1, 1)
    assert not is_correct(get_task("winograd"), 1, 0)
    ethics = get_task("sit_ethics")
    assert is_correct(ethics, (1, 0, 1, 0, 0), (1, 0, 1, 0, 0))
    assert not is_correct(ethics, (1, 0, 1, 0, 0), (1, 0, 1, 0, 1))  # one category wrong
    chegeka = get_task("chegeka")
    assert is_correct(chegeka, ("Санкт-Петербург",), "санкт-петербург!")  # EM after normalisation
    assert not is_correct(chegeka, ("Санкт-Петербург",), "Петербург")  # token F1 < 1
    # the task's own normalisation: the official one keeps ё and «», the Russian opt-in does not
    assert not is_correct(chegeka, ("Пётр",), "«Петр»")
    assert is_correct(dataclasses.replace(chegeka, normalization="russian"), ("Пётр",), "«Петр»")


def test_attack_success_rate_is_the_share_of_correct_predictions_made_wrong():
    task = get_task("winograd")
    originals = [Example(i, {"text": f"т{i}"}, label) for i, label in enumerate([1, 0, 1, 0])]
    original_predictions = [1, 0, 1, 1]  # three correct
    pairs = [(i, Example(i, {"text": f"п{i}"}, e.label)) for i, e in enumerate(originals)]
    scored = score_perturbation(task, originals, original_predictions, pairs, [0, 0, 1, 0])  # first flipped to wrong
    assert scored.asr == pytest.approx(100 / 3)
    assert (scored.attacked, scored.flipped, scored.n) == (3, 1, 4)
    # before and after: accuracy 75, macro-F1 (0.8 + 2/3) / 2; the score is their mean
    assert scored.metrics["accuracy"] == 75.0
    assert scored.score == scored.original_score == pytest.approx((75 + 100 * (0.8 + 2 / 3) / 2) / 2)


def test_the_share_of_unchanged_perturbed_examples_is_reported():
    task = get_task("winograd")
    originals = [Example(i, {"text": f"т{i}", "perturbation": "winograd"}, 1) for i in range(4)]
    copies = [Example(i, {"text": f"п{i}" if i == 0 else f"т{i}", "perturbation": "eda_swap"}, 1) for i in range(4)]
    scored = score_perturbation(task, originals, [1, 1, 1, 1], list(enumerate(copies)), [0, 1, 1, 1])
    assert scored.to_json()["unchanged_share"] == 0.75  # three copies are their original's text
    assert scored.asr == 25.0


def test_back_translation_is_not_applied_to_winograd_and_says_so():
    options = RobustnessOptions.parse("back_translation,butter_fingers", translation_model="ru-en,en-ru")
    robustness = Robustness.build(options)
    assert "back_translation is not applied to winograd, as in TAPE (Table 2)" in options.notes()
    task = get_task("winograd")
    examples = open_data(None).load(task, "test").examples
    assert set(robustness.generate(task, examples, "winograd.jsonl")) == {"butter_fingers"}  # no model loaded
    chegeka = get_task("chegeka")
    assert applies(chegeka, "back_translation") and not applies(task, "back_translation")


def test_asr_is_undefined_without_correct_originals_and_empty_sets_have_no_score():
    task = get_task("chegeka")
    originals = [Example(0, {"question": "ЭТОТ ГОРОД"}, ("Москва",))]
    pairs = [(0, Example(0, {"question": "ЭТОТ ГОРОД!"}, ("Москва",)))]
    assert score_perturbation(task, originals, ["Казань"], pairs, ["Москва"]).asr is None
    empty = score_perturbation(task, originals, ["Москва"], [], [])
    assert (empty.n, empty.score, empty.asr) == (0, None, None)


def test_perturbed_copies_pair_with_their_original_by_idx_and_gold():
    task = get_task("winograd")
    originals = [Example(0, {}, 1), Example(1, {}, 0)]
    assert pair_with_originals(task, originals, [Example(1, {}, 0)], "eda_swap", "f.jsonl") == [(1, Example(1, {}, 0))]
    with pytest.raises(DataError, match="has gold 1, its original 0"):
        pair_with_originals(task, originals, [Example(1, {}, 1)], "eda_swap", "f.jsonl")
    with pytest.raises(DataError, match="no original winograd record with that idx"):
        pair_with_originals(task, originals, [Example(5, {}, 1)], "eda_swap", "f.jsonl")
    assert pair_with_originals(task, originals, [Example(5, {}, 1)], "eda_swap", "f.jsonl", strict=False) == []


# --- semantic filter -----------------------------------------------------------------------------


class Exclaim(Perturbation):
    """Appends round(10 p) exclamation marks: the rate is visible in the output."""

    name = "exclaim"
    default_rate = 0.8

    def rewrite(self, piece, rng):
        return [Edit(len(piece.text), len(piece.text), "!" * round(10 * self.rate))]


class Calm(Similarity):
    """Similarity falls by 0.1 per exclamation mark: 8 -> 0.22, 4 -> 0.62, 2 -> 0.82, 1 -> 0.92."""

    name = "calm"
    default_threshold = 0.5

    def score(self, originals, perturbed):
        return [1.02 - p.count("!") / 10 for p in perturbed]


def filter_ethics(perturbation=None, **options):
    task = get_task("sit_ethics")
    examples = open_data(None).load(task, "test").examples
    protected = protected_spans_batch(task, examples)
    return examples, SemanticFilter(Calm(), **options).apply(task, examples, perturbation or Exclaim(), protected)


def test_filter_halves_the_rate_until_an_example_passes():
    examples, filtered = filter_ethics(threshold=0.8)
    assert [k.original for k in filtered.kept] == examples and filtered.perturbable == len(examples)
    assert {k.rate for k in filtered.kept} == {0.2}  # 0.8 and 0.4 were too far, 0.2 passes
    assert {round(k.similarity, 2) for k in filtered.kept} == {0.82}
    assert filtered.summary()["changed"] == len(examples)
    _, at_first_halving = filter_ethics(threshold=0.6)
    assert {k.rate for k in at_first_halving.kept} == {0.4}


def test_filter_halves_at_most_three_times_and_keeps_the_original_text():
    assert SemanticFilter(Calm()).rates(Exclaim()) == [0.8, 0.4, 0.2, 0.1]  # TAPE: three halvings at most
    assert SemanticFilter(Calm()).rates(Exclaim(0.03)) == [0.03, 0.015]  # and only above a rate of 0.01
    examples, filtered = filter_ethics(threshold=0.95)  # even p = 0.1 (one mark, 0.92) is too far
    assert [k.perturbed for k in filtered.kept] == examples  # never dropped: unchanged
    assert not any(k.changed for k in filtered.kept) and filtered.summary()["changed"] == 0


def test_model_based_perturbations_are_not_retried_at_lower_rates():
    translate = BackTranslation(lambda texts: texts, lambda texts: [t + "!" for t in texts], rate=1.0)
    assert SemanticFilter(Calm()).rates(translate) == [1.0]


def test_filter_lowers_the_threshold_only_when_asked():
    _, filtered = filter_ethics(threshold=0.95, min_share=1.0)
    assert all(k.changed for k in filtered.kept)
    assert filtered.threshold == 0.9  # 0.95 -> 0.9, where the one-mark attempts (0.92) pass; no float drift
    assert filter_ethics(threshold=0.95)[1].threshold == 0.95  # TAPE's protocol: min_share 0


class Shout(Perturbation):
    """Appends as many exclamation marks (1 to 8) as its generator draws."""

    name = "shout"
    default_rate = 0.8

    def rewrite(self, piece, rng):
        return [Edit(len(piece.text), len(piece.text), "!" * rng.randint(1, 8))]


def test_filter_keeps_the_closest_of_three_candidates():
    task = get_task("sit_ethics")
    examples = open_data(None).load(task, "test").examples
    protected = protected_spans_batch(task, examples)
    assert SemanticFilter(Calm()).candidates == 3  # TAPE's framework draws 3
    three = SemanticFilter(Calm(), threshold=0.0).apply(task, examples, Shout(), protected)
    one = SemanticFilter(Calm(), threshold=0.0, candidates=1).apply(task, examples, Shout(), protected)
    for example, kept in zip(examples, three.kept, strict=True):
        drawn = [Shout().perturb(example, task, Shout().rng(task, example, c)).fields["text"] for c in range(3)]
        assert kept.perturbed.fields["text"] == min(drawn, key=lambda text: text.count("!"))
    assert [k.perturbed for k in one.kept] == [Shout().perturb(e, task) for e in examples]  # candidate 0 alone
    assert sum(a.similarity > b.similarity for a, b in zip(three.kept, one.kept)) > len(examples) / 3


def test_model_based_perturbations_draw_one_candidate():
    asked = []

    def record(texts):
        asked.extend(texts)
        return [t + "!" for t in texts]

    task = get_task("sit_ethics")
    texts = ("Мама мыла раму мылом.", "Папа читал длинную книгу.", "Дети долго играли во дворе.")
    examples = [Example(i, {"text": text}, (1, 0, 0, 0, 0)) for i, text in enumerate(texts)]
    translate = BackTranslation(record, lambda t: t, rate=1.0)
    SemanticFilter(Calm(), threshold=0.0).apply(task, examples, translate, protected_spans_batch(task, examples))
    assert sorted(asked) == sorted(texts)  # each sentence translated once: no second or third candidate


def test_default_filter_is_tapes_bertscore_when_its_model_is_cached_else_char_ngrams_with_a_note(tmp_path):
    similarity, note = choose_similarity(None, cache_dir=str(tmp_path))
    assert isinstance(similarity, CharNgramSimilarity) and SemanticFilter(similarity).threshold == 0.6
    assert "character 3-gram" in note and "--filter-model" in note and "\n" not in note
    cached = tmp_path / "models--bert-base-multilingual-cased"  # the Hugging Face cache's layout
    (cached / "snapshots" / "abc123").mkdir(parents=True)
    (cached / "snapshots" / "abc123" / "config.json").write_text("{}", encoding="utf-8")
    (cached / "refs").mkdir()
    (cached / "refs" / "main").write_text("abc123", encoding="utf-8")
    similarity, note = choose_similarity(None, cache_dir=str(tmp_path))
    assert isinstance(similarity, BertScore) and note is None  # nothing is loaded before the first score
    assert similarity.model_name == "bert-base-multilingual-cased" and similarity.layer == 9
    assert SemanticFilter(similarity).threshold == 0.8
    given, note = choose_similarity("my/encoder", cache_dir=str(tmp_path / "empty"))
    assert isinstance(given, BertScore) and given.model_name == "my/encoder" and note is None


def test_filter_settings_that_could_not_work_are_refused():
    from rueval.core.errors import RuevalError

    with pytest.raises(RuevalError, match="between 0 and 1"):
        SemanticFilter(Calm(), threshold=1.5)
    with pytest.raises(RuevalError, match="positive threshold step"):
        SemanticFilter(Calm(), threshold_step=0)  # would lower the threshold forever


def test_char_ngram_similarity():
    similarity = CharNgramSimilarity()
    text = "Кошка поймала мышь в старом сарае."
    identical, case, typo, other = similarity.score(
        [text] * 4, [text, text.upper(), "Кошка поймала мвшь в стаоом сарае.", "Завтра будет дождь и ветер."]
    )
    assert identical == pytest.approx(1.0) and case == pytest.approx(1.0)
    assert 0.6 < typo < 0.95 and other < 0.3


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory) -> Path:
    require_modules("torch", "transformers", "bert_score", extra="filter")
    """A random two-layer BERT with a WordPiece vocabulary trained here: BERTScore offline."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from rueval.models.backends.tiny import sample_texts

    wordpiece = BertWordPieceTokenizer(lowercase=False)
    wordpiece.train_from_iterator(sample_texts(), vocab_size=600, show_progress=False)
    specials = {f"{k}_token": f"[{k.upper()}]" for k in ("cls", "sep", "pad", "unk", "mask")}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=wordpiece, model_max_length=512, **specials)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    out = tmp_path_factory.mktemp("tiny_bert")
    BertModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def bertscore_by_definition(model_dir: Path, layer: int, reference: str, candidate: str) -> float:
    """BERTScore F1 from its definition, as bert_score computes it without idf: each stripped text
    encoded with its special tokens, embeddings of ``layer`` L2-normalised, every token's best cosine
    with any token of the other text, averaged over the tokens that are not special."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir)
    embedded = []
    for text in (reference, candidate):
        batch = tokenizer(text.strip(), return_tensors="pt", return_special_tokens_mask=True)
        content = ~batch.pop("special_tokens_mask")[0].bool()
        with torch.no_grad():
            states = model(**batch, output_hidden_states=True).hidden_states[layer][0]
        embedded.append((torch.nn.functional.normalize(states, dim=-1), content))
    (ref, ref_content), (cand, cand_content) = embedded
    cosines = cand @ ref.T
    precision = cosines.max(dim=1).values[cand_content].mean().item()
    recall = cosines.max(dim=0).values[ref_content].mean().item()
    return 2 * precision * recall / (precision + recall)


def test_bertscore_is_the_definition_at_the_chosen_layer(tiny_bert_dir):
    text = "Кошка поймала мышь в старом сарае."
    perturbed = [text, "Кошка поймала мвшь в стаоом сарае.", "Завтра будет дождь.", "  Мышь поймала кошку "]
    for layer in (None, 1):
        scorer = BertScore(str(tiny_bert_dir), layer=layer, batch_size=2)
        scores = scorer.score([text] * len(perturbed), perturbed)
        expected = [bertscore_by_definition(tiny_bert_dir, layer or 2, text, p) for p in perturbed]
        assert scores == pytest.approx(expected, abs=1e-5)
        assert scores[0] == pytest.approx(1.0, abs=1e-5) and all(s < 0.9999 for s in scores[1:])
    assert BertScore(str(tiny_bert_dir)).name.endswith("@last")  # not in bert_score's table: the last layer


def test_bertscore_takes_the_layer_bert_score_uses_and_tapes_threshold():
    for name in ("bert-base-multilingual-cased", "google-bert/bert-base-multilingual-cased"):
        scorer = BertScore(name)  # nothing is loaded before the first score
        assert scorer.layer == 9 and scorer.name == f"bertscore:{name}@layer9"
    assert BertScore("xlm-roberta-large").layer == 17
    assert SemanticFilter(BertScore("bert-base-multilingual-cased")).threshold == 0.8


# --- perturbed records in the data ---------------------------------------------------------------


def test_loader_groups_perturbed_copies_by_name_and_prefers_episodes(tmp_path):
    question = "Что светит днём? (A) луна (B) солнце (C) лампа (D) звезда"
    typo = "Что светит днм? (A) луна (B) солнце (C) лампа (D) звезда"
    original = [
        {"question": question, "answer": "B", "perturbation": "ru_worldtree"},
        {"question": "Где? (A) тут (B) там (C) везде (D) нигде", "answer": "A", "perturbation": "ru_worldtree"},
    ]
    copies = [
        {"question": typo, "answer": "B", "perturbation": "butter_fingers"},
        {"question": "Где? (A) тут (B) там (C) везде (D) нигде", "answer": "A", "perturbation": "eda_swap"},
        {"question": "Гд? (A) тут (B) там (C) везде (D) нигде", "answer": "A", "perturbation": "butter_fingers"},
    ]
    write_jsonl(tmp_path / "dummy" / "episodes" / "ru_worldtree" / "test.jsonl", [original[0], *copies, original[1]])
    raw = [{"question": r["question"], "answer": r["answer"]} for r in original]
    write_jsonl(tmp_path / "dummy" / "raw" / "ru_worldtree" / "test.jsonl", raw)
    source, task = open_data(str(tmp_path)), get_task("ru_worldtree")
    assert "episodes" in source.load(task, "test").file  # TAPE's test sets; raw when asked for
    assert "raw" in open_data(str(tmp_path), tape_set="raw").load(task, "test").file
    stored = source.load_perturbed(task, "test")
    assert "episodes" in stored.file and set(stored.perturbed) == {"butter_fingers", "eda_swap"}
    assert [e.idx for e in stored.originals] == [0, 1]  # place among the originals, as a normal run numbers them
    assert [e.idx for e in stored.perturbed["butter_fingers"]] == [0, 1]  # place among the copies
    assert source.load_perturbed(get_task("winograd"), "test") is None


def test_done_when_majority_with_every_perturbation_prints_score_and_asr(cli, tmp_path):
    tasks = "winograd,ru_openbook,chegeka,multiq"
    result = cli("run", "-t", tasks, "-m", "majority", "--perturb", "all", "-o", tmp_path)
    assert result.exit_code == 0, result.output
    assert "back_translation not included" in result.output and "add_sent not included" in result.output
    assert "semantic filter: character 3-gram similarity" in result.output  # TAPE's BERT is not at hand here
    table = result.output[result.output.index("under perturbations") :]
    assert "ASR" in table
    for name in WORD_LEVEL_NAMES:
        assert table.count(name) == 4
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["robustness"]["requested"] == "all"
    for task in ("winograd", "ru_openbook", "chegeka", "multiq"):
        perturbations = results["tasks"][task]["perturbations"]
        assert set(perturbations) == set(WORD_LEVEL_NAMES)
        for scored in perturbations.values():
            assert scored["n"] > 0 and isinstance(scored["score"], float) and scored["source"] == "generated"
            assert scored["filter"]["total"] == scored["n"]  # never-passing examples stay, unchanged
            assert scored["unchanged_share"] == pytest.approx(1 - scored["filter"]["changed"] / scored["n"])
    # a constant prediction cannot be flipped; the span tasks had nothing correct to attack
    assert {p["asr"] for p in results["tasks"]["winograd"]["perturbations"].values()} == {0.0}
    assert {p["asr"] for p in results["tasks"]["chegeka"]["perturbations"].values()} == {None}


def test_perturb_writes_the_episodes_layout_that_run_reads_back(cli, tmp_path):
    args = ("perturb", "-t", "winograd,multiq", "--perturbations", "butter_fingers,eda_swap", "--seed", "3")
    assert cli(*args, "-o", tmp_path / "a").exit_code == 0
    assert cli(*args, "-o", tmp_path / "b").exit_code == 0
    written = tmp_path / "a" / "winograd" / "test.jsonl"
    assert written.read_bytes() == (tmp_path / "b" / "winograd" / "test.jsonl").read_bytes()  # deterministic
    records, originals = read_jsonl(written), read_jsonl(SAMPLES_DIR / "winograd" / "test.jsonl")
    markers = [r["perturbation"] for r in records]
    assert markers[: len(originals)] == ["winograd"] * len(originals)
    assert set(markers[len(originals) :]) == {"butter_fingers", "eda_swap"}
    unmarked = [{k: v for k, v in r.items() if k not in ("perturbation", "idx")} for r in records[: len(originals)]]
    assert unmarked == originals
    train = (tmp_path / "a" / "winograd" / "train.jsonl").read_text()
    assert train == (SAMPLES_DIR / "winograd" / "train.jsonl").read_text()
    for record in read_jsonl(tmp_path / "a" / "multiq" / "test.jsonl"):
        for answers, text in (("bridge_answers", "support_text"), ("main_answers", "main_text")):
            for answer in record[answers]:
                assert record[text][answer["offset"] : answer["offset"] + answer["length"]] == answer["segment"]

    plain = cli("run", "-t", "winograd,multiq", "-m", "random", "--data", tmp_path / "a", "-o", tmp_path / "plain")
    reference = cli("run", "-t", "winograd,multiq", "-m", "random", "-o", tmp_path / "reference")
    assert plain.exit_code == reference.exit_code == 0
    scores = [json.loads((tmp_path / run / "results.json").read_text())["tasks"] for run in ("plain", "reference")]
    assert [r["score"] for r in scores[0].values()] == [r["score"] for r in scores[1].values()]  # originals only

    options = ("-m", "random", "--data", tmp_path / "a", "--perturb", "all", "-o", tmp_path / "attacked")
    attacked = cli("run", "-t", "winograd,multiq", *options)
    assert attacked.exit_code == 0, attacked.output
    result = json.loads((tmp_path / "attacked" / "results.json").read_text())["tasks"]["winograd"]["perturbations"]
    assert set(result) == {"butter_fingers", "eda_swap"} and {r["source"] for r in result.values()} == {"data"}
    assert result["butter_fingers"]["n"] == markers.count("butter_fingers")


def test_add_sent_through_the_cli_with_a_causal_lm(cli, tmp_path, tiny_gpt2_dir):
    options = ("--perturbations", "add_sent", "--addsent-model", tiny_gpt2_dir, "--limit", "3")
    result = cli("perturb", "-t", "winograd", *options, "-o", tmp_path)
    assert result.exit_code == 0, result.output
    records = read_jsonl(tmp_path / "winograd" / "test.jsonl")
    added = [r for r in records if r["perturbation"] == "add_sent"]
    assert added and all(r["text"].startswith(records[r["idx"]]["text"] + " ") for r in added)


def test_rerun_with_perturbations_recomputes_instead_of_resuming(cli, tmp_path):
    assert cli("run", "-t", "winograd", "-o", tmp_path).exit_code == 0
    assert cli("run", "-t", "winograd", "-o", tmp_path, "--perturb", "eda_delete:0.5", "--force").exit_code == 0
    result = json.loads((tmp_path / "results.json").read_text())
    assert list(result["tasks"]["winograd"]["perturbations"]) == ["eda_delete"]
    assert result["robustness"]["perturbations"] == [{"name": "eda_delete", "rate": 0.5, "seed": 0}]


def test_malformed_data_to_perturb_ends_in_one_line_naming_file_and_field(cli, tmp_path, data_dir):
    path = data_dir / "multiq" / "test.jsonl"
    records = read_jsonl(path)
    records[1]["bridge_answers"] = ["Вологда"]
    write_jsonl(path, records)
    for command in (("perturb", "--perturbations", "eda_swap"), ("run", "--perturb", "eda_swap")):
        result = cli(*command, "-t", "multiq", "--data", data_dir, "-o", tmp_path / command[0])
        assert result.exit_code == 2, result.output
        message = " ".join(result.output.split())
        assert "test.jsonl: field 'bridge_answers[0]': multiq example with idx 1: expected an object" in message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "-t", "winograd", "--perturb", "typos"), "unknown perturbation 'typos'"),
        (("run", "-t", "winograd", "--perturb", "eda_swap:lots"), "the rate after ':' must be a number"),
        (("run", "-t", "winograd", "--perturb", "eda_swap:2"), "rate 2.0 is not between 0 and 1"),
        (("run", "-t", "winograd", "--perturb", "add_sent"), "add_sent needs --addsent-model"),
        (("perturb", "-t", "winograd", "--translation-model", "only-one"), "give two models"),
        (("perturb", "-t", "muserc"), "use rueval run --perturb"),
    ],
)
def test_bad_robustness_options_end_in_one_line(cli, tmp_path, args, message):
    result = cli(*args, "-o", tmp_path)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_the_summary_names_each_tasks_worst_perturbation_and_the_share_each_left_unchanged(cli, tmp_path):
    out = tmp_path / "run"
    result = cli("run", "-t", "winograd,ru_worldtree", "-m", "random", "--perturb", "butter_fingers,emojify", "-o", out)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for task in ("winograd", "ru_worldtree"):
        perturbations, summary = results["tasks"][task]["perturbations"], results["tasks"][task]["robustness"]
        scores = {name: attack["score"] for name, attack in perturbations.items()}
        worst = min(scores, key=scores.get)
        assert summary["worst"] == {
            "perturbation": worst,
            "score": scores[worst],
            "original_score": perturbations[worst]["original_score"],
        }
        for name, attack in perturbations.items():
            assert attack["test_items"] == attack["n"]  # every item has a copy, unchanged where none passed
            assert summary["unchanged_share"][name] == pytest.approx(attack["unchanged_share"])
    report = tmp_path / "report.html"
    assert cli("report", out, "-o", report).exit_code == 0
    html = report.read_text(encoding="utf-8")
    assert "worst perturbation: score" in html and "test items left unchanged" in html
    worst = results["tasks"]["winograd"]["robustness"]["worst"]["perturbation"]
    assert f"{worst} {format_score(results['tasks']['winograd']['robustness']['worst']['score'])}" in html


def test_items_without_a_perturbed_copy_count_as_left_unchanged():
    attacks = {
        "eda_swap": {
            "metrics": {},
            "score": 40.0,
            "original_score": 50.0,
            "n": 8,
            "unchanged_share": 0.25,
            "test_items": 10,
        },
        "emojify": {
            "metrics": {},
            "score": None,
            "original_score": None,
            "n": 0,
            "unchanged_share": None,
            "test_items": 10,
        },
        "old_run": {"metrics": {}, "score": 45.0, "original_score": 50.0, "n": 4, "unchanged_share": 0.5},
    }
    summary = RobustnessSummary.of(attacks)
    assert (summary.worst, summary.worst_score, summary.worst_original_score) == ("eda_swap", 40.0, 50.0)
    assert summary.unchanged == {"eda_swap": 0.4, "emojify": 1.0, "old_run": 0.5}  # 2 identical + 2 without a copy
    assert RobustnessSummary.of({}) is None
