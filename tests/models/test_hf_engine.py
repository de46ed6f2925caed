import hashlib
import json
import os
import shutil

import pytest
from support import require_modules

require_modules("torch", "transformers", extra="lm")

import torch
from tiny_models import tiny_of
from transformers import AutoModelForCausalLM

from rueval.models.backends import hf
from rueval.models.backends.hf import HFCausalLM
from rueval.models.backends.placement import model_revision
from rueval.models.backends.prefix_tree import PACK_TOKENS
from rueval.models.base import Generation, Loglikelihood, cut_at_stop
from rueval.models.cache import RequestCache, request_key
from rueval.models.engine import Engine

DEMOS = "Вопрос: Где живёт белый медведь? Ответ: в Арктике\n\nВопрос: Сколько ног у паука? Ответ: восемь\n\n"
REQUESTS = [
    Loglikelihood(DEMOS + "Вопрос: Какого цвета снег? Ответ:", " белый"),
    Loglikelihood(DEMOS + "Вопрос: Какого цвета снег? Ответ:", " зелёный"),
    Loglikelihood(DEMOS + "Вопрос: Что пьёт кошка? Ответ:", " молоко"),
    Loglikelihood(DEMOS + "Вопрос: Что пьёт кошка? Ответ: ", "воду"),  # trailing space moves to the continuation
    Loglikelihood("", DEMOS + "Вопрос: Что пьёт кошка? Ответ: молоко"),  # TAPE perplexity: the whole text
    Loglikelihood("", "Ёжик"),
    Loglikelihood("Короткий контекст", " и длинное продолжение, в котором много разных слов подряд"),
]


@pytest.fixture(scope="module")
def model(tiny_gpt2_dir):
    return HFCausalLM(str(tiny_gpt2_dir))


@pytest.fixture(scope="module")
def reference(tiny_gpt2_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval()


def plain_loglikelihood(reference, ids, first):
    """One sequence at a time, no cache, no batching: the definition."""
    with torch.no_grad():
        logprobs = reference(torch.tensor([ids])).logits[0].log_softmax(-1)
    total = sum(logprobs[j - 1, ids[j]].item() for j in range(first, len(ids)))
    greedy = all(logprobs[j - 1].argmax().item() == ids[j] for j in range(first, len(ids)))
    return total, greedy


def assert_plain_scores(model, reference, requests):
    """The model's log-likelihoods of the requests are the definition's."""
    for request, result in zip(requests, model.loglikelihood(requests)):
        assert result.logprob == pytest.approx(plain_loglikelihood(reference, *model.encode(request))[0], abs=1e-4)


@pytest.mark.parametrize(("rows", "tokens"), [(64, 16384), (2, 64), (3, 200)])
@pytest.mark.parametrize("pack_tokens", [PACK_TOKENS, 24, 0])
def test_batched_shared_prefix_scores_match_plain_transformers(model, reference, rows, tokens, pack_tokens):
    # Small budgets force padded batches of rows with different pasts; packing everything in one
    # row, packing items below a forwarded prefix, and never packing must all give the definition.
    model.max_rows, model.max_batch_tokens, model.pack_tokens = rows, tokens, pack_tokens
    results = model.loglikelihood(REQUESTS)
    model.pack_tokens = PACK_TOKENS
    for request, result in zip(REQUESTS, results):
        ids, first = model.encode(request)
        expected, greedy = plain_loglikelihood(reference, ids, first)
        assert result.logprob == pytest.approx(expected, abs=1e-4)
        assert result.n_tokens == len(ids) - first and result.greedy == greedy


@pytest.mark.parametrize("pack_tokens", [PACK_TOKENS, 24, 0])
def test_shared_and_separate_computation_agree_and_sharing_saves_tokens(model, pack_tokens):
    model.max_rows, model.max_batch_tokens, model.pack_tokens = 64, 16384, pack_tokens
    before = model.stats.forwarded_tokens
    together = model.loglikelihood(REQUESTS)
    shared_cost = model.stats.forwarded_tokens - before
    separate = [model.loglikelihood([r])[0] for r in REQUESTS]
    separate_cost = model.stats.forwarded_tokens - before - shared_cost
    model.pack_tokens = PACK_TOKENS
    for a, b in zip(together, separate):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4) and a.n_tokens == b.n_tokens
    assert shared_cost < 0.6 * separate_cost
    encoded = [ids for ids, _ in map(model.encode, REQUESTS)]
    prefixes = {tuple(ids[: i + 1]) for ids in encoded for i in range(len(ids))}
    extended = {p for p in prefixes if any(len(ids) > len(p) and tuple(ids[: len(p)]) == p for ids in encoded)}
    # Every distinct prefix that something is scored after is forwarded exactly once; a
    # sequence's last token is never forwarded.
    assert shared_cost == len(extended) < len(prefixes)


def test_packing_forwards_an_item_and_its_options_in_one_row(model):
    model.max_rows, model.max_batch_tokens = 64, 16384
    calls = model.stats.forward_calls
    model.loglikelihood(REQUESTS)
    assert model.pack_tokens == PACK_TOKENS and model.stats.forward_calls - calls == 1


def ignoring_tree_masks(forward):
    """As a model that builds its own mask from the token order (ALiBi) would."""

    def ignoring(self, input_ids, past, mask, positions):
        if mask.dim() == 4:
            mask = torch.ones(mask.shape[0], mask.shape[-1], dtype=torch.long)
        return forward(self, input_ids, past, mask, positions)

    return ignoring


def refusing_tree_masks(forward):
    """As BLOOM does: it unpacks the mask's shape as (rows, length)."""

    def refusing(self, input_ids, past, mask, positions):
        if mask.dim() == 4:
            raise ValueError("too many values to unpack (expected 2)")
        return forward(self, input_ids, past, mask, positions)

    return refusing


@pytest.mark.parametrize("wrap", [ignoring_tree_masks, refusing_tree_masks])
def test_a_model_that_ignores_or_refuses_tree_masks_is_scored_without_packing(
    tiny_gpt2_dir, reference, monkeypatch, wrap
):
    monkeypatch.setattr(HFCausalLM, "_forward", wrap(HFCausalLM._forward))
    monkeypatch.setattr(hf, "KNOWN_ARCHITECTURES", frozenset())  # GPT-2's attention is known: probe it as unknown
    fallback = HFCausalLM(str(tiny_gpt2_dir))
    assert fallback.pack_tokens == 0
    assert_plain_scores(fallback, reference, REQUESTS)


def test_a_sliding_window_shorter_than_the_sequences_scores_each_whole(tiny_gpt2_dir, tmp_path):
    tiny_of("mistral", tiny_gpt2_dir, tmp_path, max_position_embeddings=512, sliding_window=8)
    model, reference = HFCausalLM(str(tmp_path)), AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert model.window == 8
    long_requests = REQUESTS[:4]  # the demonstrations alone are far longer than 8 tokens
    calls = model.stats.forward_calls
    assert_plain_scores(model, reference, long_requests)
    assert model.stats.forward_calls - calls == 1  # four whole rows in one batch, nothing shared
    short = [Loglikelihood("Кот", " спит"), Loglikelihood("Кот", " ест")]  # within the window: shared as usual
    assert_plain_scores(model, reference, short)


def test_full_logits_path_agrees_with_the_split_output_head(model):
    expected = model.loglikelihood(REQUESTS[:3])
    model._split_head = False
    try:
        assert [r.logprob for r in model.loglikelihood(REQUESTS[:3])] == pytest.approx(
            [r.logprob for r in expected], abs=1e-4
        )
    finally:
        model._split_head = True


def test_gpt2_activations_run_as_torch_s_fused_tanh_gelu(model):
    activations = [m for m in model.model.modules() if isinstance(m, torch.nn.GELU)]
    assert len(activations) == model.model.config.n_layer and {a.approximate for a in activations} == {"tanh"}
    # the scores still match the model as transformers builds it: test_batched_shared_prefix_scores_...


def test_context_is_truncated_from_the_left_to_fit(model):
    long_context = "слово " * 3000
    ids, first = model.encode(Loglikelihood(long_context, " конец"))
    short_ids, short_first = model.encode(Loglikelihood("слово " * 3, " конец"))
    assert len(ids) == model.max_length and ids[first:] == short_ids[short_first:]


def test_engine_deduplicates_and_the_cache_makes_reruns_free(model, tmp_path):
    cache = RequestCache(tmp_path / "cache.sqlite")
    engine = Engine(model, cache, chunk_size=2)
    first = engine.loglikelihood(REQUESTS + REQUESTS[:2])
    assert engine.computed == len(REQUESTS)  # repeats computed once
    again = Engine(model, RequestCache(tmp_path / "cache.sqlite"))
    assert again.loglikelihood(REQUESTS) == first[: len(REQUESTS)]
    assert again.computed == 0


def test_generation_is_deterministic_and_stops(model):
    requests = [Generation("Вопрос: Какого цвета снег? Ответ:", 12, ("\n",), top_p=0.8, temperature=1.0, seed=3)] * 2
    requests.append(Generation("Кошка сидит", 5))
    texts = model.generate(requests)
    assert texts == model.generate(requests)  # seeded: the same requests give the same texts
    assert model.generate([Generation(requests[0].prompt, 12, ("\n",), 0.8, 1.0, seed=4)]) != model.generate(
        requests[:1]
    )
    assert all(isinstance(t, str) and "\n" not in t for t in texts[:2])
    assert len(model.tokenizer(texts[2], add_special_tokens=False)["input_ids"]) <= 6
    assert cut_at_stop("ответ\nещё", ("\n",)) == "ответ" and cut_at_stop("без стопа", ("\n",)) == "без стопа"


PROMPTS = [
    "Вопрос: Какого цвета снег? Ответ:",
    "Кошка сидит",
    "Вопрос: Где живёт белый медведь? Ответ: в",
    "Столица России —",
    "Вопрос: Сколько ног у паука?",
    "Мяч попал в окно, и",
    "Текст",
    "Пошёл снег, поэтому дети",
]


def test_sampled_texts_do_not_depend_on_batch_mates(model):
    requests = [Generation(p, 10, (), top_p=0.8, temperature=1.0, seed=7) for p in PROMPTS]
    texts = model.generate(requests)
    # a subset (as --limit or a half-filled cache leaves) gets the same texts for the same requests
    assert model.generate(requests[5:2:-1]) == texts[5:2:-1]
    greedy = model.generate([Generation(p, 10) for p in PROMPTS])
    assert greedy != texts  # a random model's samples are not its argmax texts


# (prompt, seed) of 10 sampled and 10 greedy texts of the tiny GPT-2 that run past 1,000 characters (not
# stopped early by its end token) in 450 tokens
LONG_SAMPLED = [(PROMPTS[i], 3) for i in (0, 2, 3, 4, 5)] + [("Собака лает", 3), (PROMPTS[0], 4), (PROMPTS[3], 4)]
LONG_SAMPLED += [("Собака лает", 4), (PROMPTS[0] + " и потом", 3)]
LONG_GREEDY = [PROMPTS[i] for i in (0, 1, 3, 5, 6, 7)] + ["Мама мыла раму", "Собака лает", "Кошка сидит и потом"]
LONG_GREEDY += [PROMPTS[0] + " и потом"]


@pytest.mark.slow  # 60 generations of 450 tokens
def test_one_at_a_time_texts_do_not_move_by_a_character_with_their_batch_mates(tiny_gpt2_dir):
    """--batch-size 1 generates each prompt alone: not a character of 20 texts of over 1,000 characters
    moves when they are asked in another order or a few at a time (batched mode: tests/models/test_hf_generation.py)."""
    requests = [Generation(p, 450, (), top_p=0.8, temperature=1.0, seed=seed) for p, seed in LONG_SAMPLED]
    requests += [Generation(p, 450) for p in LONG_GREEDY]
    one = HFCausalLM(str(tiny_gpt2_dir), batch_size=1)
    texts = one.generate(requests)
    assert len(requests) == 20 and min(map(len, texts)) >= 1000
    assert one.generate(requests[::-1]) == texts[::-1]
    assert one.generate(requests[3:9:2]) == texts[3:9:2]


def test_row_sampler_draws_from_the_nucleus_with_renormalised_probabilities():
    from rueval.models.backends.sampling import RowSampler

    probs = torch.tensor([0.05, 0.5, 0.15, 0.3])  # nucleus at top_p 0.7: tokens 1 and 3 (0.5 + 0.3 >= 0.7)
    requests = [Generation(f"запрос {i}", 1, top_p=0.7, temperature=1.0) for i in range(4000)]
    sampler = RowSampler(requests, torch.device("cpu"))
    out = sampler(None, probs.log().expand(len(requests), -1).clone())
    assert ((out == 0).sum(dim=1) == 1).all() and torch.isinf(out).sum(dim=1).eq(3).all()
    counts = torch.bincount(out.argmax(dim=1), minlength=4) / len(requests)
    assert counts[0] == counts[2] == 0
    assert counts[1].item() == pytest.approx(0.5 / 0.8, abs=0.03) and counts[3].item() == pytest.approx(
        0.3 / 0.8, abs=0.03
    )


def test_each_finished_generation_is_in_the_cache_when_a_later_one_fails(tiny_gpt2_dir, tmp_path, monkeypatch):
    model = HFCausalLM(str(tiny_gpt2_dir), batch_size=1)  # one at a time (batched: test_hf_generation.py)
    requests = [Generation(p, 6, (), top_p=0.8, temperature=1.0) for p in PROMPTS]
    calls = []
    generate_one = HFCausalLM._generate_one

    def failing_on_the_third(self, request):
        calls.append(request)
        if len(calls) == 3:
            raise KeyboardInterrupt  # as a kill would stop it
        return generate_one(self, request)

    monkeypatch.setattr(HFCausalLM, "_generate_one", failing_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        Engine(model, RequestCache(tmp_path / "cache.sqlite")).generate(requests)
    monkeypatch.undo()
    rerun = Engine(model, RequestCache(tmp_path / "cache.sqlite"))
    texts = rerun.generate(requests)
    assert rerun.computed == len(requests) - 2  # the two generations before the failure were kept
    assert texts == model.generate(requests)


def test_scored_sequences_are_committed_as_their_forward_pass_finishes(model, tmp_path, monkeypatch):
    model.max_rows, model.pack_tokens = 1, 0  # one sequence per forward pass
    forward = HFCausalLM._forward
    calls = []

    def failing_late(self, *args):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return forward(self, *args)

    monkeypatch.setattr(HFCausalLM, "_forward", failing_late)
    with pytest.raises(KeyboardInterrupt):
        Engine(model, RequestCache(tmp_path / "cache.sqlite")).loglikelihood(REQUESTS)
    monkeypatch.undo()
    kept = len(RequestCache(tmp_path / "cache.sqlite").get_many(request_key(model.identity, r) for r in REQUESTS))
    rerun = Engine(model, RequestCache(tmp_path / "cache.sqlite"))
    results = rerun.loglikelihood(REQUESTS)
    model.max_rows, model.pack_tokens = 64, PACK_TOKENS
    assert 0 < kept < len(REQUESTS) and rerun.computed == len(REQUESTS) - kept
    assert [r.logprob for r in results] == pytest.approx([r.logprob for r in model.loglikelihood(REQUESTS)], abs=1e-4)


@pytest.fixture(scope="module")
def wide_gpt2_dir(tmp_path_factory):
    """A GPT-2 whose weights file is several MiB, so that its middle is neither its first nor its last MiB."""
    from rueval.models.backends.tiny import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("wide"), n_embd=192, n_head=2)


def middle_tensor(weights):
    """The byte range of a tensor lying wholly after the first and before the last MiB."""
    raw = weights.read_bytes()
    header_size = int.from_bytes(raw[:8], "little")  # the safetensors layout: header length, JSON header, data
    header = json.loads(raw[8 : 8 + header_size])
    for name, entry in header.items():
        if name != "__metadata__":
            start, end = (8 + header_size + offset for offset in entry["data_offsets"])
            if start > 1 << 20 and end < len(raw) - (1 << 20) and entry["dtype"] == "F32":
                return start, end
    raise AssertionError("no tensor in the middle")


def test_weights_changed_in_the_middle_change_the_identity_and_are_recomputed(wide_gpt2_dir, tmp_path, monkeypatch):
    folder = tmp_path / "model"
    shutil.copytree(wide_gpt2_dir, folder)
    weights = folder / "model.safetensors"
    cache = tmp_path / "cache.sqlite"
    before = HFCausalLM(str(folder))
    first = Engine(before, RequestCache(cache))
    old = first.loglikelihood(REQUESTS)

    start, end = middle_tensor(weights)
    stat = weights.stat()
    with weights.open("r+b") as f:  # the same size, the same first and last MiB, the same mtime
        f.seek(start)
        f.write(torch.randn((end - start) // 4).numpy().astype("<f4").tobytes())
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = HFCausalLM(str(folder))
    rerun = Engine(after, RequestCache(cache))
    new = rerun.loglikelihood(REQUESTS)
    assert after.identity != before.identity and rerun.computed == len(REQUESTS)  # no cached hit
    assert [r.logprob for r in new] != pytest.approx([r.logprob for r in old], abs=1e-3)
    assert_plain_scores(after, AutoModelForCausalLM.from_pretrained(folder).eval(), REQUESTS)

    monkeypatch.setattr(hashlib, "file_digest", lambda *a: pytest.fail("an unchanged file was hashed again"))
    again = HFCausalLM(str(folder))
    assert again.identity == after.identity and Engine(again, RequestCache(cache)).loglikelihood(REQUESTS) == new


@pytest.mark.parametrize("memo", ["[1, 2]", '{"KEY": {"stamp": "STAMP"}}', '{"KEY": 5}', "not json"])
def test_a_damaged_memo_of_file_hashes_is_hashed_anew_not_a_traceback(tiny_gpt2_dir, tmp_path, monkeypatch, memo):
    """The memo (a cache) keeps each weights file's hash by its stamp; a row that cannot be read is computed."""
    monkeypatch.setenv("RUEVAL_CACHE_DIR", str(tmp_path / "cache"))
    expected = model_revision(str(tiny_gpt2_dir))
    weights = (tiny_gpt2_dir / "model.safetensors").resolve()
    stat = weights.stat()
    stamp = json.dumps([stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino])
    memo_file = tmp_path / "cache" / "model-files" / "sha256.json"
    memo_file.write_text(memo.replace("KEY", str(weights)).replace('"STAMP"', stamp), encoding="utf-8")
    assert model_revision(str(tiny_gpt2_dir)) == expected
    assert isinstance(json.loads(memo_file.read_text(encoding="utf-8"))[str(weights)]["sha256"], str)
