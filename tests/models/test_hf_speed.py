"""The engine's fast paths give the definition's numbers: few-shot rows packed side by side on a shared
cache, architectures taken as known without a probe, texts tokenized in one call, and (where a GPU is
present) the same engine on CUDA in float32 and bfloat16; batched generation (prompts sharing a prefix
among them) on the CPU and on CUDA, in float32 and bfloat16."""

import pytest
from support import require_modules

require_modules("torch", "transformers", extra="lm")

import torch
from generation_cases import Cases, cut_problems, prompts
from tiny_models import tiny_of
from transformers import AutoModelForCausalLM

from rueval.models.backends.hf import KNOWN_ARCHITECTURES, HFCausalLM, _known_architecture
from rueval.models.backends.prefix_tree import PACK_TOKENS
from rueval.models.base import Loglikelihood

DEMOS = [
    "Пример: Мальчик уронил стакан, поэтому стакан разбился.\n\nПример: Шёл дождь, поэтому улицы были мокрыми.\n\n",
    "Пример: Девочка замёрзла, потому что забыла шарф.\n\nПример: Кот спал, потому что устал.\n\n",
]
ITEMS = [
    ("Солнце село", " стало темно.", " пошёл снег."),
    ("Чайник закипел", " мы налили чай.", " собака залаяла."),
    ("Телефон разрядился", " его поставили заряжаться.", " в небе появилась радуга."),
    ("Ребёнок заплакал", " мама взяла его на руки.", " поезд ушёл по расписанию."),
    ("Он опоздал на автобус", " пришлось идти пешком.", " река вышла из берегов."),
]
FEW_SHOT = [  # two episodes of demonstrations, each item with its two options: the shape of PARus at 4-shot x 5
    Loglikelihood(f"{demos}Пример: {premise}, поэтому", option)
    for demos in DEMOS
    for premise, *options in ITEMS
    for option in options
]


@pytest.fixture(scope="module")
def plain(tiny_gpt2_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval()


def definition(reference, ids: list[int], first: int) -> tuple[float, bool]:
    """One sequence at a time through plain transformers, no cache, no batching."""
    with torch.no_grad():
        logprobs = reference(torch.tensor([ids], device=reference.device)).logits[0].float().log_softmax(-1)
    total = sum(logprobs[j - 1, ids[j]].item() for j in range(first, len(ids)))
    return total, all(logprobs[j - 1].argmax().item() == ids[j] for j in range(first, len(ids)))


def answers(logprobs: list[float]) -> list[int]:
    """The option picked for each item (options come in pairs)."""
    return [int(logprobs[i + 1] > logprobs[i]) for i in range(0, len(logprobs), 2)]


@pytest.mark.parametrize(("pack_tokens", "rows"), [(1024, 64), (PACK_TOKENS, 64), (64, 64), (20, 2)])
def test_few_shot_scores_equal_the_plain_per_sequence_forward_to_1e_5(tiny_gpt2_dir, plain, pack_tokens, rows):
    # Everything in one row (1024); each episode's demonstrations forwarded once, then its items side
    # by side in rows on that cache (PACK_TOKENS, 64); an item per row, in batches of two rows of
    # different pasts (20): all are the definition.
    model = HFCausalLM(str(tiny_gpt2_dir))
    model.pack_tokens, model.max_rows = pack_tokens, rows
    results = model.loglikelihood(FEW_SHOT)
    expected = [definition(plain, *model.encode(r)) for r in FEW_SHOT]
    for result, (logprob, greedy) in zip(results, expected, strict=True):
        assert result.logprob == pytest.approx(logprob, abs=1e-5) and result.greedy == greedy
    assert answers([r.logprob for r in results]) == answers([logprob for logprob, _ in expected])
    if pack_tokens == 1024:  # the whole trie fits one row: one pass
        assert model.stats.forward_calls == 1
    assert model.stats.forwarded_tokens < 0.3 * sum(len(model.encode(r)[0]) for r in FEW_SHOT)


def test_texts_are_tokenized_in_one_call_as_they_are_one_by_one(tiny_gpt2_dir):
    model = HFCausalLM(str(tiny_gpt2_dir))
    requests = [*FEW_SHOT, Loglikelihood("", "Ёжик"), Loglikelihood("Контекст ", "с пробелом")]
    assert model._encode_all(requests) == [model.encode(r) for r in requests]


@pytest.mark.parametrize("architecture", sorted(KNOWN_ARCHITECTURES))
def test_every_architecture_taken_as_known_passes_the_probes_it_skips(architecture, tiny_gpt2_dir, tmp_path):
    folder = tiny_of(architecture, tiny_gpt2_dir, tmp_path)
    model = HFCausalLM(str(folder))
    assert _known_architecture(model.model) and model.pack_tokens == PACK_TOKENS and model._split_head
    assert model._head_matches_full_forward() and model._packing_matches_plain()
    reference = AutoModelForCausalLM.from_pretrained(folder).eval()
    for request, result in zip(FEW_SHOT[:4], model.loglikelihood(FEW_SHOT[:4]), strict=True):
        assert result.logprob == pytest.approx(definition(reference, *model.encode(request))[0], abs=1e-5)


def test_a_known_architecture_loads_without_probing(tiny_gpt2_dir, monkeypatch):
    def probe(self):
        raise AssertionError("probed")

    monkeypatch.setattr(HFCausalLM, "_packing_matches_plain", probe)
    monkeypatch.setattr(HFCausalLM, "_head_matches_full_forward", probe)
    assert HFCausalLM(str(tiny_gpt2_dir)).pack_tokens == PACK_TOKENS


def test_a_local_folder_s_identity_is_its_content_hash_taken_while_loading(tiny_gpt2_dir, tmp_path):
    from rueval.models.backends.placement import content_hash

    model = HFCausalLM(str(tiny_gpt2_dir))
    assert model.identity == f"hf:{tiny_gpt2_dir}@{content_hash(tiny_gpt2_dir)}"


# -- CUDA: run where a GPU is present (its absence is no failure, in CI too) --------------------------
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")


@cuda
def test_cuda_float32_scores_equal_the_definition(tiny_gpt2_dir):
    model = HFCausalLM(str(tiny_gpt2_dir), device="cuda", dtype="float32")
    model.pack_tokens = 1024
    reference = AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir, dtype=torch.float32).to("cuda").eval()
    results = model.loglikelihood(FEW_SHOT)
    expected = [definition(reference, *model.encode(r)) for r in FEW_SHOT]
    assert [r.logprob for r in results] == pytest.approx([e for e, _ in expected], abs=1e-4)
    assert model.stats.forward_calls == 1  # packed on the GPU as on the CPU


@cuda
def test_cuda_bfloat16_scores_are_close_to_float32_and_pick_the_same_answers(tiny_gpt2_dir):
    full = HFCausalLM(str(tiny_gpt2_dir), device="cuda", dtype="float32").loglikelihood(FEW_SHOT)
    half_model = HFCausalLM(str(tiny_gpt2_dir), device="cuda", dtype="bfloat16")
    assert half_model.model.dtype == torch.bfloat16 and half_model.pack_tokens == PACK_TOKENS
    half = half_model.loglikelihood(FEW_SHOT)
    for a, b in zip(full, half, strict=True):
        assert b.logprob == pytest.approx(a.logprob, rel=0.05, abs=0.5)  # bfloat16 keeps 8 bits of mantissa


# -- batched generation on each device: the CPU here, CUDA where a GPU is present ------------------------
DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=cuda)]
# prompts that share a few-shot prefix (an episode's demonstrations), prefilled once in a batch
SHARED_PREFIX = [f"{demos}Пример: {premise}, поэтому" for demos in DEMOS for premise, *_ in ITEMS]


def generation_cases(folder, device: str, dtype: str) -> Cases:
    """generation_cases' stops and budgets on a few bundled prompts and on the shared-prefix prompts, with
    the texts of `hf:` one prompt at a time on ``device`` in ``dtype``."""
    one = HFCausalLM(str(folder), device=device, dtype=dtype, batch_size=1)
    assert one.generation_mode == "one-at-a-time"
    return Cases.of(one, [*prompts(4), *SHARED_PREFIX])


@pytest.mark.parametrize("device", DEVICES)
def test_batched_greedy_texts_equal_one_at_a_time_except_at_ties(tiny_gpt2_dir, device):
    cases = generation_cases(tiny_gpt2_dir, device, "float32")
    batched = HFCausalLM(str(tiny_gpt2_dir), device=device, dtype="float32", batch_size=8)
    assert batched.generation_mode == "batched"
    texts = batched.generate(cases.requests)
    assert cut_problems(cases.requests, texts) == []
    found = cases.agreement(texts)
    assert found.real == [], found.line()


@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_batched_texts_cut_at_stops_and_budgets_as_their_stop_free_texts(tiny_gpt2_dir, device):
    """In bfloat16 a batch's rounding may move a greedy choice more often (8 bits of mantissa): each text is
    still its stop-free text cut at its first stop, and within its budget."""
    cases = generation_cases(tiny_gpt2_dir, device, "bfloat16")
    batched = HFCausalLM(str(tiny_gpt2_dir), device=device, dtype="bfloat16", batch_size=8)
    assert batched.model.dtype == torch.bfloat16 and batched.generation_mode == "batched"
    assert cut_problems(cases.requests, batched.generate(cases.requests)) == []
