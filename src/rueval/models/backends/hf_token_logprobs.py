"""Token log-probabilities of whole texts on an `hf:` model (TokenLogprobs): membership scores need each
token's log-probability, and Min-K%++ the whole next-token distribution's mean and deviation of log p.

Texts share no prefixes worth a tree (each is an item of its own), so they are forwarded as plain rows,
sorted by length and padded on the right within the model's token budget; the vocabulary-wide logits of
a row are made HEAD_ROWS positions at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from rueval.models.base import OnDone, TokenLogprobs, TokenLogprobsResult

HEAD_ROWS = 256  # positions whose vocabulary-wide logits are made at a time


class HFCausalLM(Protocol):
    """What scoring texts reads of rueval.models.backends.hf.HFCausalLM (which imports this module)."""

    tokenizer: Any
    device: Any
    start_token: int
    max_length: int
    max_rows: int
    max_batch_tokens: int

    def _call(self, input_ids: Any, cache: Any, mask: Any, positions: Any, keep_cache: bool = True) -> Any: ...
    def _head(self, hidden: Any) -> Any: ...


def text_ids(model: HFCausalLM, requests: Sequence[TokenLogprobs]) -> list[list[int]]:
    """Each text's token ids after the model's start token, cut to the model's window."""
    distinct = list(dict.fromkeys(r.text for r in requests))
    tokenized = dict(zip(distinct, model.tokenizer(distinct, add_special_tokens=False)["input_ids"], strict=True))
    return [[model.start_token, *tokenized[r.text]][: model.max_length] for r in requests]


def token_logprobs(
    model: HFCausalLM, requests: Sequence[TokenLogprobs], on_done: OnDone | None = None
) -> list[TokenLogprobsResult]:
    """TokenLogprobsResult of each request, each batch reported to ``on_done`` as it finishes."""
    import torch

    ids = text_ids(model, requests)
    order = sorted(range(len(requests)), key=lambda i: len(ids[i]))
    results: dict[int, TokenLogprobsResult] = {}
    with torch.inference_mode():
        for batch in _batches(order, ids, model.max_rows, model.max_batch_tokens):
            done = _forward_batch(model, [ids[i] for i in batch], [requests[i].distribution for i in batch])
            results.update(zip(batch, done, strict=True))
            if on_done is not None:
                on_done(list(zip(batch, done, strict=True)))
    return [results[i] for i in range(len(requests))]


def _batches(order: list[int], ids: list[list[int]], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Consecutive runs of ``order`` (shortest first) whose padded size fits ``max_tokens`` and ``max_rows``."""
    batches: list[list[int]] = []
    for i in order:
        last = batches[-1] if batches else None
        if last is not None and len(last) < max_rows and (len(last) + 1) * len(ids[i]) <= max_tokens:
            last.append(i)
        else:
            batches.append([i])
    return batches


def _forward_batch(model: HFCausalLM, rows: list[list[int]], distribution: list[bool]) -> list[TokenLogprobsResult]:
    import torch

    width = max(map(len, rows))
    input_ids = torch.tensor([row + [model.start_token] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    positions = torch.arange(width).expand(len(rows), width)
    # the model's last states (the output head then runs HEAD_ROWS positions at a time), or its logits whole
    _, states = model._call(input_ids, None, mask, positions, keep_cache=False)
    return [
        _row_result(states[r, : len(row) - 1], torch.tensor(row[1:], device=model.device), model._head, full)
        for r, (row, full) in enumerate(zip(rows, distribution, strict=True))
    ]


def _row_result(states, targets, head, distribution: bool) -> TokenLogprobsResult:
    """The log-probability of each target after its position's state (and the distribution's statistics)."""
    import torch

    logprobs, means, deviations = [], [], []
    for start in range(0, len(targets), HEAD_ROWS):
        chunk = states[start : start + HEAD_ROWS]
        logits = head(chunk).float()
        log_p = torch.log_softmax(logits, dim=-1)
        logprobs += log_p.gather(-1, targets[start : start + HEAD_ROWS, None])[:, 0].tolist()
        if distribution:  # in float64, the variance about the mean: sum p (log p)^2 - mu^2 cancels in float32
            log_p = log_p.double()
            p = log_p.exp()
            mu = (p * log_p).sum(-1).clamp_max(0)  # <= 0 but for rounding
            means += mu.tolist()
            deviations += (p * (log_p - mu[:, None]).square()).sum(-1).sqrt().tolist()
    return TokenLogprobsResult(tuple(logprobs), tuple(means), tuple(deviations))
