"""Cascade attention for `hf:`'s batched generation: rows that share a prompt prefix keep one copy of its
keys and values, and every step reads it once for all of them.

A row's attention then runs in two parts over disjoint columns: (1) the queries of every row of a group,
stacked, against the group's shared prefix (one product for the group: the prefix is read once, not once
per row) and (2) each row against its own columns in the batch cache (its own prompt tail and generated
tokens, with the batch's mask). Each part's softmax is normalised by its own log-sum-exp; weighting the
two outputs by those sums' share of their total is exactly softmax attention over all the columns.

It plugs into transformers' ``AttentionInterface`` under ``NAME`` (with the eager mask, always an
additive float tensor) while a batched generation runs, so the model code is not forked. A forward not
given ``cascade=`` (a prefix forwarded alone) and the rows of a forward that share no kept prefix run
transformers' "sdpa" attention. It serves the architectures rueval.models.backends.hf.KNOWN_ARCHITECTURES
names (GPT-2, Llama, Mistral, Qwen2) as transformers builds them, with torch's attention ("sdpa" or
"eager"; ``HFCausalLM.cascade_attention``): their attention modules look the function up by the config's
name at every forward and pass their ``layer_idx``. A model with its own code (``trust_remote_code``),
another attention (flash, flex) or another architecture (one with ALiBi, logit capping or a sliding
window among them) keeps its own attention, each row holding its own copy of a shared prefix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, eager_mask

NAME = "rueval_cascade"
# torch's CPU attention kernel, which also gives the log-sum-exp (a private operator: where a build lacks it,
# and on other devices, the scores are computed here)
CPU_ATTENTION = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
Past = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values): 1 x heads x columns x size


@dataclass(frozen=True, eq=False)
class SharedPrefix:
    """The rows that attend to one prefix's keys and values, held once: their places in the batch, also as
    runs ``(start, end, columns)`` of consecutive places whose own tokens lie in the batch cache's last
    ``columns`` columns (the columns before are holes for them)."""

    rows: torch.Tensor
    runs: list[tuple[int, int, int]]
    past: Past


@dataclass(frozen=True, eq=False)
class Cascade:
    """A forward's groups of rows sharing a prefix, and the runs ``(start, end)`` of the other rows."""

    groups: list[SharedPrefix]
    plain: list[tuple[int, int]]


def shared_prefixes(prefixes: Sequence[tuple[Past, int] | None], device: torch.device) -> dict[str, Any]:
    """The forward's keyword arguments for a batch whose row r reads the keys and values ``prefixes[r][0]``
    before its own tokens, the last ``prefixes[r][1]`` columns of the batch cache (None: no shared prefix);
    the rows given one past (the same object) form a group. No such row: no arguments (the forward runs as
    without cascade attention)."""
    groups: dict[int, tuple[list[int], Past, list[int]]] = {}
    plain: list[int] = []
    for r, prefix in enumerate(prefixes):
        if prefix is None:
            plain.append(r)
        else:
            rows, _, own = groups.setdefault(id(prefix[0]), ([], prefix[0], []))
            rows.append(r)
            own.append(prefix[1])
    if not groups:
        return {}
    shared = [
        SharedPrefix(torch.tensor(rows, device=device), runs_of(rows, own), past) for rows, past, own in groups.values()
    ]
    return {"cascade": Cascade(shared, [(start, end) for start, end, _ in runs_of(plain, [0] * len(plain))])}


def runs_of(rows: list[int], columns: list[int]) -> list[tuple[int, int, int]]:
    """Ascending places as runs ``(start, end, most columns)`` of consecutive ones."""
    runs: list[tuple[int, int, int]] = []
    for r, own in zip(rows, columns, strict=True):
        if runs and runs[-1][1] == r:
            runs[-1] = (runs[-1][0], r + 1, max(runs[-1][2], own))
        else:
            runs.append((r, r + 1, own))
    return runs


def cascade_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    cascade: Cascade | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """The attention output (rows x queries x heads x size) of ``query`` (rows x heads x queries x size)
    against each row's own ``key``/``value`` columns under its additive ``attention_mask`` and, for the
    rows of each ``cascade`` group, its shared prefix. The other rows run torch's SDPA as without cascade
    attention. Key/value heads fewer than query heads (grouped query attention) are shared by consecutive
    query heads, without copies."""
    if cascade is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    rows, heads, length, size = query.shape
    out = query.new_empty(rows, length, heads, value.shape[-1])
    for start, end in cascade.plain:
        mask = None if attention_mask is None else attention_mask[start:end]
        part = (query[start:end], key[start:end], value[start:end])
        out[start:end] = sdpa_attention_forward(module, *part, mask, scaling=scaling, **kwargs)[0]
    kv_heads = key.shape[1]
    per_kv = heads // kv_heads * length  # the queries that read each key/value head
    scale = size**-0.5 if scaling is None else scaling
    for group in cascade.groups:
        keys, values = group.past[module.layer_idx]
        n = len(group.rows)
        queries = query.index_select(0, group.rows).reshape(n, kv_heads, per_kv, size)
        stacked = queries.transpose(0, 1).reshape(1, kv_heads, n * per_kv, size)
        shared, shared_total = _attend(stacked, keys, values, scale, None)
        shared = shared.reshape(kv_heads, n, per_kv, -1).transpose(0, 1)
        shared_total = shared_total.reshape(kv_heads, n, per_kv, 1).transpose(0, 1)
        at = 0
        for start, end, columns in group.runs:  # a run's own columns are a view of the batch cache
            mine, own = slice(at, at + end - start), slice(-columns, None)
            mask = None
            if attention_mask is not None:
                mask = attention_mask[start:end, :, :, own].repeat(1, 1, heads // kv_heads, 1)
            part, part_total = _attend(queries[mine], key[start:end, :, own], value[start:end, :, own], scale, mask)
            both = torch.logaddexp(part_total, shared_total[mine])
            merged = part * torch.exp(part_total - both).to(part.dtype)
            merged += shared[mine] * torch.exp(shared_total[mine] - both).to(part.dtype)
            out[start:end] = merged.reshape(end - start, heads, length, -1).transpose(1, 2)
            at = mine.stop
    return out, None


def _attend(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention and the log-sum-exp of its scores (float32), per query."""
    if queries.device.type == "cpu" and CPU_ATTENTION is not None:
        out, total = CPU_ATTENTION(queries, keys, values, 0.0, False, attn_mask=mask, scale=scale)
        return out, total.unsqueeze(-1)
    scores = torch.matmul(queries, keys.transpose(-1, -2)).float() * scale
    if mask is not None:
        scores = scores + mask
    total = torch.logsumexp(scores, dim=-1, keepdim=True)
    return torch.matmul(torch.exp(scores - total).to(values.dtype), values), total


@contextmanager
def swapped(model: Any) -> Iterator[None]:
    """The model's attention is cascade attention within the block (its own again after it)."""
    AttentionInterface.register(NAME, cascade_attention)
    AttentionMaskInterface.register(NAME, eager_mask)
    config = model.config
    own = config._attn_implementation
    config._attn_implementation = NAME
    try:
        yield
    finally:
        config._attn_implementation = own
