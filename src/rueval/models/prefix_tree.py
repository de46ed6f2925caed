"""Scoring token sequences that share prefixes, each shared token forwarded once.

Few-shot prompts repeat the same demonstrations before every test item, and every answer
option repeats its item's context. The sequences are put in a token trie; runs of tokens
without a branch form segments. A segment is forwarded once, on top of the key/value cache of
the segment before it, and its cache is handed to every segment that continues it. Segments
from different parents share one forward pass: each row's past is padded to the longest and
the padding masked out, with explicit position ids, as left-padded generation does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

WINDOW_BATCHES = 4  # how many batches' worth of pending segments are sorted by length at a time
MIN_FILL = 0.8  # a batch's shortest row must fill this share of its longest

# (input_ids, past or None, attention_mask, position_ids) -> (hidden states, new past)
Forward = Callable[..., tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]]


@dataclass(eq=False)
class _TrieNode:
    children: dict[int, _TrieNode] = field(default_factory=dict)
    scored: bool = False  # the next token's log-probability is needed here
    logprobs: dict[int, tuple[float, bool]] = field(default_factory=dict)  # next token -> (logprob, is argmax)


@dataclass(eq=False)
class _Segment:
    tokens: list[int]
    nodes: list[_TrieNode]  # the trie node after each token of the segment
    parent: _Segment | None
    past_len: int  # tokens before the segment
    children: list[_Segment] = field(default_factory=list)
    past: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # per layer (keys, values), the whole prefix
    waiting: int = 0  # children not yet forwarded: the cache is dropped when this reaches zero


@dataclass
class TreeStats:
    forwarded_tokens: int = 0  # tokens fed to the model, padding excluded
    padded_tokens: int = 0  # padding fed alongside
    forward_calls: int = 0


def score_sequences(
    sequences: Sequence[tuple[Sequence[int], int]],
    forward: Forward,
    head: Callable[[torch.Tensor], torch.Tensor],
    max_rows: int,
    max_tokens: int,
    stats: TreeStats | None = None,
) -> list[tuple[float, bool]]:
    """For each (tokens, first_scored), the summed log-probability of tokens[first_scored:] and
    whether each of them was the argmax. ``first_scored`` must be at least 1."""
    root = _TrieNode()
    for tokens, first in sequences:
        node = root
        for position, token in enumerate(tokens):
            if position >= first:
                node.scored = True
            node = node.children.setdefault(token, _TrieNode())
    pending = [_segment(child, token, None, 0) for token, child in root.children.items()]
    stats = stats or TreeStats()
    while pending:
        batch = _take(pending, max_rows, max_tokens)
        for segment in _forward(batch, forward, head, stats):
            pending.extend(reversed(segment.children))  # depth first: finish a subtree, free its cache
    results = []
    for tokens, first in sequences:
        node, logprob, greedy = root, 0.0, True
        for position, token in enumerate(tokens):
            if position >= first:
                token_logprob, is_argmax = node.logprobs[token]
                logprob += token_logprob
                greedy = greedy and is_argmax
            node = node.children[token]
        results.append((logprob, greedy))
    return results


def _segment(node: _TrieNode, token: int, parent: _Segment | None, past_len: int) -> _Segment:
    """The segment starting with ``token`` and running until the trie branches or ends."""
    tokens, nodes = [token], [node]
    while len(node.children) == 1:
        token, node = next(iter(node.children.items()))
        tokens.append(token)
        nodes.append(node)
    return _Segment(tokens, nodes, parent, past_len)


def _take(pending: list[_Segment], max_rows: int, max_tokens: int) -> list[_Segment]:
    """The next batch. Candidates come from the top of the stack, a few batches' worth, and the
    shortest go first: rows padded together are then alike, and answer options (short, deep in
    the tree) are scored soon after their context, so its cache is freed early. A row joins while
    the padded-token budget allows and the batch's shortest row still fills most of its width."""
    window = pending[-WINDOW_BATCHES * max_rows :]
    del pending[len(pending) - len(window) :]
    window.sort(key=lambda s: len(s.tokens), reverse=True)
    batch: list[_Segment] = []
    longest = 0
    while window and len(batch) < max_rows:
        length = max(longest, window[-1].past_len + len(window[-1].tokens))
        if batch and length * (len(batch) + 1) > max_tokens:
            break
        if batch and MIN_FILL * len(window[-1].tokens) > len(batch[0].tokens):
            break  # mostly padding for the rows already taken: it starts the next batch
        batch.append(window.pop())
        longest = length
    pending.extend(reversed(window))
    return batch


def _forward(batch: list[_Segment], forward: Forward, head, stats: TreeStats) -> list[_Segment]:
    """Run one batch, record the log-probabilities it yields, and return the segments whose
    children are now ready."""
    batch.sort(key=lambda s: (s.past_len, len(s.tokens)))
    rows, past_max = len(batch), max(s.past_len for s in batch)
    new_max = max(len(s.tokens) for s in batch)
    input_ids = torch.zeros(rows, new_max, dtype=torch.long)
    mask = torch.zeros(rows, past_max + new_max, dtype=torch.long)
    positions = torch.zeros(rows, new_max, dtype=torch.long)
    for r, segment in enumerate(batch):
        n = len(segment.tokens)
        input_ids[r, :n] = torch.tensor(segment.tokens)
        mask[r, : segment.past_len] = 1
        mask[r, past_max : past_max + n] = 1
        positions[r] = segment.past_len + torch.arange(new_max)
    past = _stack_pasts([s.parent.past if s.parent else None for s in batch], past_max) if past_max else None
    hidden, new_past = forward(input_ids, past, mask, positions)
    stats.forward_calls += 1
    stats.forwarded_tokens += sum(len(s.tokens) for s in batch)
    stats.padded_tokens += rows * new_max - sum(len(s.tokens) for s in batch)

    # Log-probabilities only where a scored token follows: the output head is the costly part.
    wanted = [(r, i) for r, s in enumerate(batch) for i, node in enumerate(s.nodes) if node.scored]
    if wanted:
        rows_index = torch.tensor([r for r, _ in wanted])
        cols_index = torch.tensor([i for _, i in wanted])
        logprobs = torch.log_softmax(head(hidden[rows_index, cols_index]).float(), dim=-1)
        best = logprobs.argmax(dim=-1).tolist()
        for k, (r, i) in enumerate(wanted):
            node = batch[r].nodes[i]
            next_tokens = list(node.children)
            values = logprobs[k, next_tokens].tolist()
            node.logprobs = {t: (v, t == best[k]) for t, v in zip(next_tokens, values, strict=True)}

    ready = []
    for r, segment in enumerate(batch):
        end = segment.nodes[-1]
        if end.children:
            n = len(segment.tokens)
            own = [
                (k[r : r + 1, :, past_max : past_max + n].clone(), v[r : r + 1, :, past_max : past_max + n].clone())
                for k, v in new_past
            ]
            parent_past = segment.parent.past if segment.parent else None
            segment.past = (
                own
                if parent_past is None
                else [
                    (torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2))
                    for (pk, pv), (k, v) in zip(parent_past, own, strict=True)
                ]
            )
            length = segment.past_len + n
            segment.children = [_segment(child, token, segment, length) for token, child in end.children.items()]
            segment.waiting = len(segment.children)
            ready.append(segment)
        if segment.parent is not None:
            segment.parent.waiting -= 1
            if segment.parent.waiting == 0:
                segment.parent.past = None
    return ready


def _stack_pasts(
    pasts: list[list[tuple[torch.Tensor, torch.Tensor]] | None], length: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, every row's cache right-padded to ``length`` (the padding is masked out)."""
    template = next(p for p in pasts if p is not None)
    stacked = []
    for layer, (keys, values) in enumerate(template):
        shape = (len(pasts), keys.shape[1], length, keys.shape[3])
        k_out, v_out = keys.new_zeros(shape), values.new_zeros(shape)
        for r, past in enumerate(pasts):
            if past is not None:
                k, v = past[layer]
                k_out[r, :, : k.shape[2]] = k[0]
                v_out[r, :, : v.shape[2]] = v[0]
        stacked.append((k_out, v_out))
    return stacked
