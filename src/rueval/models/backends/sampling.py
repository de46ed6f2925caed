"""Sampling that does not depend on batching: each request draws from its own random stream.

transformers' ``generate`` samples a whole batch from one global generator, so a request's text
would depend on its batch-mates, the batch size, ``--limit`` and which requests the cache already
held. ``draw`` picks each row's token from its own generator (batched generation calls it per step);
``RowSampler`` runs it inside the greedy loop (``do_sample=False``) as a logits processor: it
applies temperature and nucleus (top-p) filtering as transformers' warpers do, draws one token
per row from that row's ``torch.Generator``, and leaves every other token at -inf, so the greedy
step picks the drawn token.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict

import torch
from transformers import LogitsProcessor

from rueval.models.base import Generation


def request_seed(request: Generation) -> int:
    """A 63-bit seed from the request's prompt, settings and run seed."""
    payload = json.dumps(asdict(request), ensure_ascii=False, sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(payload).digest()[:8], "little") >> 1


def draw(scores: torch.Tensor, generators: Sequence[torch.Generator], temperature: float, top_p: float) -> torch.Tensor:
    """One token per row, drawn from that row's generator after temperature and nucleus (top-p) filtering."""
    probs = (scores.float() / temperature).softmax(dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)
    # the nucleus: the most probable tokens until their mass reaches top_p (the first always kept)
    sorted_probs = sorted_probs.masked_fill(sorted_probs.cumsum(dim=-1) - sorted_probs >= top_p, 0.0)
    cumulative = sorted_probs.cumsum(dim=-1)
    draws = torch.stack([torch.rand((), generator=g, device=g.device) for g in generators])
    picked = torch.searchsorted(cumulative, (draws * cumulative[:, -1]).unsqueeze(1).to(cumulative.dtype))
    return order.gather(1, picked.clamp(max=scores.shape[-1] - 1)).squeeze(1)


class RowSampler(LogitsProcessor):
    """``draw`` inside transformers' greedy loop (one prompt at a time): every token but the drawn one at -inf."""

    def __init__(self, requests: Sequence[Generation], device: torch.device):
        first = requests[0]
        self.temperature = first.temperature or 1.0
        self.top_p = first.top_p
        self.generators = [torch.Generator(device=device).manual_seed(request_seed(r)) for r in requests]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        chosen = draw(scores, self.generators, self.temperature, self.top_p).unsqueeze(1)
        return torch.full_like(scores, float("-inf")).scatter_(1, chosen, 0.0)
