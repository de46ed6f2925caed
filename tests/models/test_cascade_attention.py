"""Cascade attention (rueval.models.backends.cascade_attention) against the plain batched path: the same
logits, step by step, for every row of a batch where prompts share long prefixes (two different ones),
rows join as others leave and budgets end rows early; on the tiny GPT-2 and on a Llama-style model whose
key/value heads are fewer than its query heads. A model with its own code keeps its own attention."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
from support import require_modules

require_modules("torch", "transformers", "tokenizers", extra="lm")

import torch
from tiny_models import tiny_of
from transformers import AutoTokenizer

from rueval.models.backends import cascade_attention
from rueval.models.backends.batch_generation import CASCADE_MIN, BatchGenerator, Budget, new_rows
from rueval.models.backends.cascade_attention import swapped
from rueval.models.backends.hf import HFCausalLM
from rueval.models.backends.hf_generation import prompt_ids
from rueval.models.base import Generation

DEMOS = [
    "".join(f"Вопрос: Сколько будет {i} {word} {i}? Ответ: {i * 2}.\n" for i in range(1, 9))
    for word in ("плюс", "умножить на")
]
QUESTIONS = [f"Вопрос: Сколько будет {i} плюс {i + 3}? Ответ:" for i in range(20, 27)]


def requests() -> list[Generation]:
    """Two runs of prompts sharing their demonstrations (different ones), plain prompts between them, and
    budgets from 2 to 14 tokens: rows finish early and waiting rows join the running batch."""
    shared = [Generation(demos + q, 2 + (i * 5) % 13) for demos in DEMOS for i, q in enumerate(QUESTIONS)]
    plain = [Generation("Кошка сидит", 9), Generation("Мяч попал в окно, и", 4)]
    return sorted(shared + plain, key=lambda r: r.prompt)


class Recorded(BatchGenerator):
    """The batch generator, keeping each row's logits at every step it takes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.logits: dict[int, list[torch.Tensor]] = {}

    def _append(self, rows, logits):
        for row, row_logits in zip(rows, logits, strict=True):
            if not row.done:
                self.logits.setdefault(row.index, []).append(row_logits.clone())
        super()._append(rows, logits)


def generate(model: HFCausalLM, cascade: bool) -> tuple[Recorded, list]:
    """Every request through a generator of 5 places, with cascade attention or without; the forwards'
    cascade arguments."""
    asked = requests()
    seen = []

    def step(*args, **attention):
        seen.append(attention.get("cascade"))
        return model._generation_step(*args, **attention)

    eos = frozenset([model.model.generation_config.eos_token_id])
    generator = Recorded(
        step, Budget(5, 4096, 1 << 20), eos, lambda t: "", lambda rows: [False] * len(rows), model.device, cascade
    )
    rows = new_rows(asked, [prompt_ids(model, r) for r in asked], model.device)
    with torch.inference_mode(), swapped(model.model) if cascade else nullcontext():
        generator.run(rows, lambda row, text: None)
    return generator, seen


@pytest.fixture(scope="module")
def llama_style(tiny_gpt2_dir, tmp_path_factory) -> HFCausalLM:
    """A random Llama (rotary positions, 4 query heads over 2 key/value heads) with the tiny GPT-2's tokenizer."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2_dir)
    folder = tmp_path_factory.mktemp("llama")
    eos = tokenizer.eos_token_id
    return HFCausalLM(str(tiny_of("llama", tiny_gpt2_dir, folder, max_position_embeddings=1024, bos_token_id=eos)))


@pytest.mark.parametrize(
    ("kind", "kernel"), [("gpt2", "torch's"), ("llama-style", "torch's"), ("gpt2", "scores computed here")]
)
def test_cascade_attention_gives_the_plain_paths_logits(kind, kernel, tiny_gpt2_dir, llama_style, monkeypatch):
    """With torch's CPU kernel, and without it (a GPU's path, or a torch build that lacks it)."""
    if kernel != "torch's":
        monkeypatch.setattr(cascade_attention, "CPU_ATTENTION", None)
    model = HFCausalLM(str(tiny_gpt2_dir)) if kind == "gpt2" else llama_style
    assert model.cascade_attention
    plain, plain_seen = generate(model, cascade=False)
    cascaded, seen = generate(model, cascade=True)
    assert not any(plain_seen)  # the plain path is given no cascade arguments
    demos = len(model._tokens(DEMOS[0]))
    assert demos >= CASCADE_MIN
    groups = [c.groups for c in seen if c is not None]
    assert groups and max(map(len, groups)) >= 2  # rows of different prefixes in one forward
    assert len(groups) < len(seen)  # the plain rows' prefixes are forwarded without it
    assert plain.logits.keys() == cascaded.logits.keys() == set(range(len(requests())))
    for index, steps in plain.logits.items():
        assert len(steps) == len(cascaded.logits[index])
        for want, got in zip(steps, cascaded.logits[index], strict=True):
            assert torch.allclose(want, got, atol=1e-5, rtol=0), (index, (want - got).abs().max())


def test_a_model_with_its_own_code_keeps_its_own_attention(tiny_gpt2_dir):
    from transformers import GPT2LMHeadModel

    class OwnCode(GPT2LMHeadModel):  # as a model loaded with trust_remote_code is
        pass

    model = HFCausalLM(str(tiny_gpt2_dir))
    own = HFCausalLM.from_loaded(OwnCode.from_pretrained(tiny_gpt2_dir), model.tokenizer)
    assert model.cascade_attention and not own.cascade_attention
    asked = requests()
    assert own.generate(asked) == model.generate(asked)
    assert model.model.config._attn_implementation == own.model.config._attn_implementation  # restored
