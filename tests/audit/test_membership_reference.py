"""rueval's membership scores against the reference code's formulas (zjysteven/mink-plus-plus, run.py), restated
here as that script computes them, side by side on the same tiny model, texts and token ids: they agree to 1e-5.

run.py scores ``tokenizer.encode(text)``; rueval scores a text after the model's start token, so both sides are
given the start token followed by the text's tokens. run.py's "zlib" is the mean log-likelihood over the zlib
length (higher: member); rueval's is the log-perplexity over it (lower: member): one is minus the other.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from support import require_modules

require_modules("torch", "transformers", "tokenizers", extra="lm")

import torch

from rueval.audit import membership_scores as ms
from rueval.models.base import TokenLogprobs

F = torch.nn.functional

TEXTS = [
    "Мама мыла раму.",
    "Кошка спала на окне, а собака лаяла во дворе до самого вечера.",
    "Вопрос: какого цвета небо? Ответ: голубого, если нет облаков.",
    "Один, два, три, четыре, пять — вышел зайчик погулять. " * 6,
]
RATIOS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def reference_scores(model, input_ids: list[int], text: str) -> dict[str, float]:
    """run.py's per-text scores for ``input_ids`` (its loop body, with ``input_ids`` given rather than encoded)."""
    scores = {}
    input_ids = torch.tensor(input_ids).unsqueeze(0)
    with torch.no_grad():
        outputs = model(input_ids, labels=input_ids)
    loss, logits = outputs[:2]
    ll = -loss.item()
    scores["loss"] = ll
    scores["zlib"] = ll / len(zlib.compress(bytes(text, "utf-8")))
    input_ids = input_ids[0][1:].unsqueeze(-1)
    probs = F.softmax(logits[0, :-1], dim=-1)
    log_probs = F.log_softmax(logits[0, :-1], dim=-1)
    token_log_probs = log_probs.gather(dim=-1, index=input_ids).squeeze(-1)
    mu = (probs * log_probs).sum(-1)
    sigma = (probs * torch.square(log_probs)).sum(-1) - torch.square(mu)
    for ratio in RATIOS:
        k_length = int(len(token_log_probs) * ratio)
        topk = np.sort(token_log_probs.cpu())[:k_length]
        scores[f"mink_{ratio}"] = np.mean(topk).item()
    mink_plus = (token_log_probs - mu) / sigma.sqrt()
    for ratio in RATIOS:
        k_length = int(len(mink_plus) * ratio)
        topk = np.sort(mink_plus.cpu())[:k_length]
        scores[f"mink++_{ratio}"] = np.mean(topk).item()
    return scores


@pytest.fixture(scope="module")
def briefly_trained(tiny_gpt2_dir, tmp_path_factory):
    """The tiny GPT-2 trained a few steps: its next-token distributions are not near uniform."""
    import shutil

    from rueval.models.backends.tiny import sample_texts, train_tiny_model

    folder = shutil.copytree(tiny_gpt2_dir, tmp_path_factory.mktemp("reference") / "model")
    return train_tiny_model(folder, sample_texts(), steps=30)


@pytest.mark.filterwarnings(
    "ignore:Mean of empty slice", "ignore:invalid value encountered"
)  # run.py on k% of no token
@pytest.mark.parametrize("batch_size", [1, 3])
def test_scores_equal_the_reference_formulas(briefly_trained, batch_size):
    from transformers import AutoModelForCausalLM

    from rueval.models.backends.hf import HFCausalLM
    from rueval.models.backends.hf_token_logprobs import text_ids
    from rueval.models.engine import Engine

    hf = HFCausalLM(str(briefly_trained), batch_size=batch_size)  # 3: rows of different lengths padded together
    requests = [TokenLogprobs(text, distribution=True) for text in TEXTS]
    results = Engine(hf).token_logprobs(requests)
    plain = AutoModelForCausalLM.from_pretrained(briefly_trained).eval()
    for text, ids, result in zip(TEXTS, text_ids(hf, requests), results, strict=True):
        reference = reference_scores(plain, ids, text)
        assert len(result.logprobs) == len(ids) - 1
        for ratio in (r for r in RATIOS if int(len(result.logprobs) * r) >= 1):  # run.py: a mean of none is NaN
            assert ms.min_k(result.logprobs, ratio) == pytest.approx(reference[f"mink_{ratio}"], abs=1e-5)
            pp = ms.min_k_pp(result.logprobs, result.means, result.deviations, ratio)
            assert pp == pytest.approx(reference[f"mink++_{ratio}"], abs=1e-5)
        assert ms.perplexity(result.logprobs) == pytest.approx(math.exp(-reference["loss"]), rel=1e-5)
        assert ms.zlib_ratio(result.logprobs, text) == pytest.approx(-reference["zlib"], abs=1e-5)
    shortest = min(results, key=lambda r: len(r.logprobs)).logprobs
    assert int(len(shortest) * 0.1) == 0 and ms.min_k(shortest, 0.1) == min(shortest)  # rueval: at least one token
