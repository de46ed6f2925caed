"""`hf:`'s batched generation (continuous batching, shared prefixes prefilled once) against its
one-prompt-at-a-time mode on the tiny GPT-2: the same texts but at ties, each row's own stops, budget
and seed, finished rows cached as they leave, and the mode recorded where results are keyed."""

from __future__ import annotations

import json

import pytest
from support import require_modules

require_modules("torch", "transformers", "tokenizers", extra="lm")


from rueval.models.backends import batch_generation
from rueval.models.backends.batch_generation import BatchGenerator, common_length, shared_runs
from rueval.models.backends.greedy_ties import TIE, first_divergence
from rueval.models.backends.hf import HFCausalLM
from rueval.models.backends.hf_generation import BATCHED, ONE_AT_A_TIME, greedy_generate, prompt_ids
from rueval.models.base import Generation
from rueval.models.cache import RequestCache, request_key
from rueval.models.engine import Engine

DEMOS = "".join(f"Вопрос: Сколько будет {i} плюс {i}? Ответ: {2 * i}.\n" for i in range(1, 9))
QUESTIONS = [f"Вопрос: Сколько будет {i} плюс {i + 3}? Ответ:" for i in range(20, 44)]
OTHER = ["Кошка сидит", "", "Мяч попал в окно, и", "Столица России —"]


def requests_of_every_kind() -> list[Generation]:
    """Few-shot prompts sharing their demonstrations, plain ones, an empty one; stops of one and several
    characters, budgets from 1 to 40, greedy and sampled."""
    requests = [Generation(DEMOS + q, 12 + i % 5 * 7, ("\n", "Вопрос")) for i, q in enumerate(QUESTIONS)]
    requests += [Generation(p, 40, (".",)) for p in OTHER] + [Generation("Кошка сидит", 1)]
    requests += [Generation(DEMOS + q, 20, ("\n",), top_p=0.8, temperature=1.0, seed=5) for q in QUESTIONS[:8]]
    return sorted(requests, key=lambda r: r.prompt)  # as the engine orders them: shared prefixes together


@pytest.fixture(scope="module")
def one_at_a_time(tiny_gpt2_dir):
    return HFCausalLM(str(tiny_gpt2_dir), batch_size=1)


@pytest.fixture(scope="module")
def expected(one_at_a_time):
    requests = requests_of_every_kind()
    return requests, one_at_a_time.generate(requests)


def disagreements(model: HFCausalLM, requests, texts, expected_texts) -> list[tuple[str, float | None]]:
    """Greedy texts that differ from the one-at-a-time texts, each with its top-two logit gap where they part."""
    return [
        (request.prompt[-30:], first_divergence(model, request, want, got))
        for request, want, got in zip(requests, expected_texts, texts, strict=True)
        if want != got and request.temperature == 0
    ]


@pytest.mark.parametrize("rows", [64, 5, 2])
def test_batched_texts_equal_one_at_a_time_texts_but_at_ties(tiny_gpt2_dir, one_at_a_time, expected, rows):
    """With every row at once, and with 5 or 2 places (rows leave and others join all along)."""
    requests, want = expected
    model = HFCausalLM(str(tiny_gpt2_dir), batch_size=rows)
    assert model.generation_mode == BATCHED and one_at_a_time.generation_mode == ONE_AT_A_TIME
    texts = model.generate(requests)
    assert all(gap is not None and gap < TIE for _, gap in disagreements(one_at_a_time, requests, texts, want))
    greedy = [i for i, r in enumerate(requests) if r.temperature == 0]
    assert sum(texts[i] == want[i] for i in greedy) >= len(greedy) - 1
    assert not any(stop in text for request, text in zip(requests, texts, strict=True) for stop in request.stop)


def test_sampled_rows_draw_from_their_own_seed(tiny_gpt2_dir):
    model = HFCausalLM(str(tiny_gpt2_dir), batch_size=4)
    requests = [Generation(DEMOS + q, 15, (), top_p=0.8, temperature=1.0, seed=7) for q in QUESTIONS[:6]]
    texts = model.generate(requests)
    assert model.generate(requests) == texts  # the same requests: the same texts
    reseeded = model.generate([Generation(r.prompt, 15, (), 0.8, 1.0, seed=8) for r in requests])
    assert all(a != b for a, b in zip(texts, reseeded, strict=True))
    assert texts != model.generate([Generation(r.prompt, 15) for r in requests])  # not the argmax texts


def test_shared_demonstrations_are_prefilled_once(tiny_gpt2_dir, monkeypatch):
    model = HFCausalLM(str(tiny_gpt2_dir), batch_size=6)
    generators: list[BatchGenerator] = []

    def recorded(*args) -> BatchGenerator:
        generators.append(BatchGenerator(*args))
        return generators[-1]

    monkeypatch.setattr(batch_generation, "BatchGenerator", recorded)
    requests = [Generation(DEMOS + q, 3) for q in QUESTIONS]
    model.generate(requests)
    prompts = sorted(model.tokenizer([r.prompt for r in requests], add_special_tokens=False)["input_ids"])
    demos = len(model.tokenizer(DEMOS.rstrip("\n"), add_special_tokens=False)["input_ids"])
    # at the least, each distinct token prefix once (the prompts' trie); at most, as here, the demonstrations
    # once for all 24 prompts joining 6 at a time (kept for the later groups)
    trie = 1 + len(prompts[0]) + sum(len(b) - common_length(a, b) for a, b in zip(prompts, prompts[1:], strict=False))
    assert trie <= generators[0].prefilled < sum(map(len, prompts)) - 22 * demos


def test_shared_runs_save_the_most_tokens():
    a, b = list(range(100)), list(range(200, 260))
    prompts = [a + [1], a + [2], a + [3], b + [4], b + [5], [7, 8]]
    assert shared_runs(prompts) == [(0, 3, 100), (3, 5, 60), (5, 6, 0)]
    assert shared_runs([a, a]) == [(0, 2, 99)]  # each member keeps a token of its own
    assert shared_runs([[1, 2, 3], [1, 2, 4]]) == [(0, 1, 0), (1, 2, 0)]  # below MIN_SHARED: nothing shared


def test_rows_that_finish_are_cached_when_a_later_step_fails(tiny_gpt2_dir, tmp_path, monkeypatch):
    """Fault injection: the 12th forward pass is interrupted (as a kill would); the rows that left before
    it are in the cache, and a rerun computes only the others, to the same texts."""
    model = HFCausalLM(str(tiny_gpt2_dir), batch_size=4)
    requests = [Generation(p, budget) for p in OTHER + QUESTIONS[:4] for budget in (2, 30)]
    step, calls = HFCausalLM._generation_step, []

    def failing(self, *args):
        calls.append(1)
        if len(calls) == 12:
            raise KeyboardInterrupt
        return step(self, *args)

    monkeypatch.setattr(HFCausalLM, "_generation_step", failing)
    with pytest.raises(KeyboardInterrupt):
        Engine(model, RequestCache(tmp_path / "cache.sqlite")).generate(requests)
    monkeypatch.undo()
    rerun = Engine(model, RequestCache(tmp_path / "cache.sqlite"))
    texts = rerun.generate(requests)
    assert 0 < rerun.computed < len(requests)
    assert texts == model.generate(requests)


def test_the_generation_mode_keys_the_cache_and_is_recorded(tiny_gpt2_dir, one_at_a_time, tmp_path):
    from typer.testing import CliRunner

    from rueval.cli import app

    request = Generation("Кошка сидит", 5)
    batched = HFCausalLM(str(tiny_gpt2_dir))
    assert request_key(batched.identity, request, BATCHED) != request_key(batched.identity, request, ONE_AT_A_TIME)
    assert request_key(batched.identity, request, ONE_AT_A_TIME) == request_key(batched.identity, request)
    runs = {}
    for size in ("1", "auto"):
        out = tmp_path / size
        args = ["run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "multiq", "--limit", "2", "--cache", "off", "-o", str(out)]
        result = CliRunner().invoke(app, [*args, "--batch-size", size], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        runs[size] = json.loads((out / "run.json").read_text()), json.loads((out / "tasks" / "multiq.json").read_text())
    assert runs["1"][0]["generation_mode"] == ONE_AT_A_TIME and runs["auto"][0]["generation_mode"] == BATCHED
    assert runs["1"][1]["fingerprint"] != runs["auto"][1]["fingerprint"]


def test_a_model_with_logits_processing_in_its_config_generates_one_at_a_time(tiny_gpt2_dir):
    model = HFCausalLM(str(tiny_gpt2_dir))
    model.model.generation_config.repetition_penalty = 1.3  # as a model's generation_config.json may set it
    assert model.generation_mode == ONE_AT_A_TIME


def test_a_generation_config_without_an_end_token_ends_no_text_early(tiny_gpt2_dir):
    """transformers' generate ends a text at the generation config's end token alone: when the config has
    none, the batched mode too runs to the budget, past the tokenizer's end token."""
    models = [HFCausalLM(str(tiny_gpt2_dir), batch_size=size) for size in (1, 8)]
    request = Generation("Кошка сидит", 12)
    prompt = prompt_ids(models[0], request)
    greedy = greedy_generate(models[0], prompt, 3)[0, len(prompt) :].tolist()
    third = models[0].tokenizer.convert_ids_to_tokens(greedy[-1])
    for model in models:
        model.model.generation_config.eos_token_id = None
        model.tokenizer.eos_token = third  # the tokenizer's end token now comes third in the greedy text
    one, batched = (model.generate([request])[0] for model in models)
    assert models[1].generation_mode == BATCHED
    assert batched == one
    assert len(batched) > len(models[0].tokenizer.decode(greedy[:-1]))
