"""Scoring token sequences that share prefixes, each shared token forwarded once.

Few-shot prompts repeat the same demonstrations before every test item, and every answer
option repeats its item's context. The sequences are put in a token trie and forwarded in rows:

- a small subtree (an item: its context and every option) is packed into a row, its tokens in
  depth-first order, each attending only to its own ancestors (a tree attention mask) at the
  position of its depth, so the context is forwarded once and every option reads it in the
  same pass; the small subtrees of one parent share rows, side by side, up to PACK_TOKENS each;
- a large subtree (a few-shot block under which many items branch off) has its unbranched head
  forwarded alone; the head's key/value cache is then the past of every row below it.

Rows of different parents share a forward pass: each row's past is padded to the longest and
the padding masked. A token after which nothing is scored (a sequence's last) is never forwarded:
its log-probability comes from the position before it.

``share=False`` forwards every sequence whole, on its own row, with no past: for models whose
attention a shared cache or a tree mask would change (a sliding window shorter than the
sequences).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

PACK_TOKENS = 256  # the longest row of packed subtrees (attention over a row grows with its square)
WINDOW_BATCHES = 4  # how many batches' worth of pending rows are sorted by length at a time
MIN_FILL = 0.8  # a batch's shortest row must fill this share of its longest
HEAD_ROWS = 256  # the output head runs on this many positions at a time: its logits are vocabulary-wide

# (input_ids, past or None, mask, position_ids) -> (hidden states, new past). The mask is 2D
# (rows, past + new; 1 = attend) when every row is a plain sequence, else a boolean 4D tree mask
# (rows, 1, new, past + new; True = attend).
Forward = Callable[..., tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]]


@dataclass(eq=False)
class _TrieNode:
    children: dict[int, _TrieNode] = field(default_factory=dict)
    scored: bool = False  # the next token's log-probability is needed here
    logprobs: dict[int, tuple[float, bool]] = field(default_factory=dict)  # next token -> (logprob, is argmax)
    size: int = 0  # tokens to forward in the subtree from here: the nodes that have children


@dataclass(eq=False)
class _Row:
    """Tokens forwarded together: a packed subtree, or the unbranched head of a large one."""

    tokens: list[int]
    nodes: list[_TrieNode]  # the trie node after each token
    ancestors: list[int]  # each token's predecessor in the row; -1 for the first (it follows the past)
    depths: list[int]  # each token's distance from the row's first token
    parent: _Row | None  # the row whose cache is this row's past
    past_len: int  # tokens before the row
    branched: bool = False  # a packed subtree that branches: it needs a tree mask
    children: list[_Row] = field(default_factory=list)
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
    pack_tokens: int = PACK_TOKENS,
    share: bool = True,
    on_done: Callable[[list[tuple[int, tuple[float, bool]]]], None] | None = None,
) -> list[tuple[float, bool]]:
    """For each (tokens, first_scored), the summed log-probability of tokens[first_scored:] and
    whether each of them was the argmax. ``first_scored`` must be at least 1. ``pack_tokens`` 0
    never packs: every row is a plain sequence (for models that take no tree mask); ``share``
    False shares nothing (see above). ``on_done`` gets (index, result) of the sequences whose
    last scored token a forward pass has just computed."""
    root = _TrieNode()
    waiting: dict[_TrieNode, list[int]] = defaultdict(list)  # a scored node -> the sequences that need it
    unscored = []  # per sequence, its scored nodes not yet forwarded
    reported: dict[int, tuple[float, bool]] = {}
    for i, (tokens, first) in enumerate(sequences):
        node = root
        for position, token in enumerate(tokens):
            if position >= first:
                node.scored = True
                waiting[node].append(i)
            node = node.children.setdefault(token, _TrieNode())
        unscored.append(max(0, len(tokens) - first))
    _count_sizes(root)
    if share:
        pending = _rows_below(root, None, 0, pack_tokens)
    else:
        pending = [_whole(root, tokens) for tokens in dict.fromkeys(tuple(t) for t, _ in sequences) if len(tokens) > 1]
    stats = stats or TreeStats()
    while pending:
        batch = _take(pending, max_rows, max_tokens)
        ready, scored = _forward(batch, forward, head, stats, share)
        for row in ready:
            row.children = _rows_below(row.nodes[-1], row, row.past_len + len(row.tokens), pack_tokens)
            row.waiting = len(row.children)
            pending.extend(reversed(row.children))  # depth first: finish a subtree, free its cache
        if on_done is not None:
            finished = []
            for node in scored:
                for i in waiting.pop(node, ()):
                    unscored[i] -= 1
                    if unscored[i] == 0:
                        finished.append(i)
                        reported[i] = _score(root, *sequences[i])
            if finished:
                on_done([(i, reported[i]) for i in finished])
    return [reported[i] if i in reported else _score(root, *sequence) for i, sequence in enumerate(sequences)]


def _score(root: _TrieNode, tokens: Sequence[int], first: int) -> tuple[float, bool]:
    """The summed log-probability of tokens[first:] and whether each was the argmax."""
    node, logprob, greedy = root, 0.0, True
    for position, token in enumerate(tokens):
        if position >= first:
            token_logprob, is_argmax = node.logprobs[token]
            logprob += token_logprob
            greedy = greedy and is_argmax
        node = node.children[token]
    return logprob, greedy


def _count_sizes(root: _TrieNode) -> None:
    """Set every node's ``size``, children before parents (no recursion: sequences can be long)."""
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children.values())
    for node in reversed(order):
        node.size = (1 if node.children else 0) + sum(child.size for child in node.children.values())


def _rows_below(node: _TrieNode, parent: _Row | None, past_len: int, pack_tokens: int) -> list[_Row]:
    """The rows that forward what follows ``node``: the unbranched head of each child subtree too large to
    pack, and the small ones packed side by side, several to a row of at most ``pack_tokens``, largest
    first into the first row with room (rows of nearly one length: little padding, and one copy of the
    past per row rather than per item)."""
    heads: list[_Row] = []
    packed: list[_Row] = []
    open_rows: list[_Row] = []  # those with room for the smallest subtree
    children = sorted(((t, c) for t, c in node.children.items() if c.size), key=lambda pair: -pair[1].size)
    smallest = children[-1][1].size if children else 0
    for token, child in children:
        if child.size > pack_tokens:
            heads.append(_head(token, child, parent, past_len))
            continue
        row = next((r for r in open_rows if len(r.tokens) + child.size <= pack_tokens), None)
        if row is None:
            row = _Row([], [], [], [], parent, past_len)
            packed.append(row)
            open_rows.append(row)
        _pack(row, token, child)
        if len(row.tokens) + smallest > pack_tokens:
            open_rows.remove(row)
    for row in packed:
        row.branched = any(a != i - 1 for i, a in enumerate(row.ancestors))
    return heads + packed


def _pack(row: _Row, token: int, node: _TrieNode) -> None:
    """Append the whole subtree from ``node`` to the row, depth first, leaves left out; its first token
    follows the row's past."""
    stack = [(token, node, -1)]
    while stack:
        token, node, ancestor = stack.pop()
        row.tokens.append(token)
        row.nodes.append(node)
        row.ancestors.append(ancestor)
        row.depths.append(row.depths[ancestor] + 1 if ancestor >= 0 else 0)
        here = len(row.tokens) - 1
        stack.extend((t, child, here) for t, child in reversed(node.children.items()) if child.children)


def _whole(root: _TrieNode, tokens: Sequence[int]) -> _Row:
    """One sequence on its own row, its last token left out."""
    nodes, node = [], root
    for token in tokens[:-1]:
        node = node.children[token]
        nodes.append(node)
    return _chain(list(tokens[:-1]), nodes, None, 0)


def _head(token: int, node: _TrieNode, parent: _Row | None, past_len: int) -> _Row:
    """The run of tokens from ``node`` until the trie branches (or nothing more is forwarded)."""
    tokens, nodes = [token], [node]
    while len(node.children) == 1:
        token, node = next(iter(node.children.items()))
        if not node.children:
            break
        tokens.append(token)
        nodes.append(node)
    return _chain(tokens, nodes, parent, past_len)


def _chain(tokens: list[int], nodes: list[_TrieNode], parent: _Row | None, past_len: int) -> _Row:
    """A row of tokens that each follow the one before (no branch)."""
    n = len(tokens)
    return _Row(tokens, nodes, list(range(-1, n - 1)), list(range(n)), parent, past_len)


def _take(pending: list[_Row], max_rows: int, max_tokens: int) -> list[_Row]:
    """The next batch. Candidates come from the top of the stack, a few batches' worth, and the
    shortest go first: rows padded together are then alike, and short rows deep in the tree are
    done soon after their parent, so its cache is freed early. A row joins while the padded-token
    budget allows and the batch's shortest row still fills most of its width."""
    window = pending[-WINDOW_BATCHES * max_rows :]
    del pending[len(pending) - len(window) :]
    window.sort(key=lambda s: len(s.tokens), reverse=True)
    batch: list[_Row] = []
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


def _forward(
    batch: list[_Row], forward: Forward, head, stats: TreeStats, share: bool
) -> tuple[list[_Row], list[_TrieNode]]:
    """Run one batch, record the log-probabilities it yields, and return the rows whose children
    are now ready (their cache kept; none when rows are not shared) and the nodes just scored."""
    batch.sort(key=lambda s: (s.past_len, len(s.tokens)))
    rows, past_max = len(batch), max(s.past_len for s in batch)
    new_max = max(len(s.tokens) for s in batch)
    input_ids = torch.zeros(rows, new_max, dtype=torch.long)
    positions = torch.zeros(rows, new_max, dtype=torch.long)
    for r, row in enumerate(batch):
        n = len(row.tokens)
        input_ids[r, :n] = torch.tensor(row.tokens)
        positions[r, :n] = row.past_len + torch.tensor(row.depths)
    mask = (_tree_mask if any(row.branched for row in batch) else _padding_mask)(batch, past_max, new_max)
    past = stack_pasts([s.parent.past if s.parent else None for s in batch], past_max) if past_max else None
    hidden, new_past = forward(input_ids, past, mask, positions)
    stats.forward_calls += 1
    stats.forwarded_tokens += sum(len(s.tokens) for s in batch)
    stats.padded_tokens += rows * new_max - sum(len(s.tokens) for s in batch)

    # Log-probabilities only where a scored token follows: the output head is the costly part.
    wanted = [(r, i) for r, s in enumerate(batch) for i, node in enumerate(s.nodes) if node.scored]
    scored = [batch[r].nodes[i] for r, i in wanted]
    if wanted:
        states = hidden[torch.tensor([r for r, _ in wanted]), torch.tensor([i for _, i in wanted])]
        for start in range(0, len(scored), HEAD_ROWS):
            _record_logprobs(scored[start : start + HEAD_ROWS], head(states[start : start + HEAD_ROWS]).float())

    ready = []
    for r, row in enumerate(batch):
        # Only an unbranched head has rows below it; a packed row forwarded its whole subtree.
        if share and not row.branched and any(child.size for child in row.nodes[-1].children.values()):
            n = len(row.tokens)
            own = [
                (k[r : r + 1, :, past_max : past_max + n].clone(), v[r : r + 1, :, past_max : past_max + n].clone())
                for k, v in new_past
            ]
            parent_past = row.parent.past if row.parent else None
            row.past = (
                own
                if parent_past is None
                else [
                    (torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2))
                    for (pk, pv), (k, v) in zip(parent_past, own, strict=True)
                ]
            )
            ready.append(row)
        if row.parent is not None:
            row.parent.waiting -= 1
            if row.parent.waiting == 0:
                row.parent.past = None
    return ready, scored


def _record_logprobs(nodes: list[_TrieNode], logits: torch.Tensor) -> None:
    """Each node's log-probability of every token that follows it, and whether that token is the argmax
    (only those entries of the log-softmax are computed)."""
    picks = [(k, token) for k, node in enumerate(nodes) for token in node.children]
    at, tokens = torch.tensor(picks).unbind(1)
    values = (logits[at, tokens] - torch.logsumexp(logits, dim=-1)[at]).tolist()
    best = logits.argmax(dim=-1).tolist()
    for (k, token), value in zip(picks, values, strict=True):
        nodes[k].logprobs[token] = (value, token == best[k])


def _padding_mask(batch: list[_Row], past_max: int, new_max: int) -> torch.Tensor:
    """Plain sequences: each row attends to its own past and tokens (causality is the model's)."""
    mask = torch.zeros(len(batch), past_max + new_max, dtype=torch.long)
    for r, row in enumerate(batch):
        mask[r, : row.past_len] = 1
        mask[r, past_max : past_max + len(row.tokens)] = 1
    return mask


def _tree_mask(batch: list[_Row], past_max: int, new_max: int) -> torch.Tensor:
    """Each token attends to its row's past and to its own ancestors in the row, itself included. A packed
    row is in depth-first order, so a token's subtree is the span from it to its subtree's end: token i
    sees token j exactly when j <= i < end(j). A padding position's span is itself alone, so that no
    softmax runs over nothing. A few whole-batch comparisons, not an operation per depth."""
    mask = torch.zeros(len(batch), 1, new_max, past_max + new_max, dtype=torch.bool)
    ends = torch.arange(1, new_max + 1).repeat(len(batch), 1)
    for r, row in enumerate(batch):
        mask[r, 0, : len(row.tokens), : row.past_len] = True
        ends[r, : len(row.tokens)] = torch.tensor(_subtree_ends(row.ancestors))
    at = torch.arange(new_max)
    query, key = at.view(1, -1, 1), at.view(1, 1, -1)
    mask[:, 0, :, past_max:] = (key <= query) & (query < ends.unsqueeze(1))
    return mask


def _subtree_ends(ancestors: list[int]) -> list[int]:
    """For each token of a depth-first row, the index after the last token of its subtree."""
    sizes = [1] * len(ancestors)
    for i in range(len(ancestors) - 1, 0, -1):
        if ancestors[i] >= 0:
            sizes[ancestors[i]] += sizes[i]
    return [i + size for i, size in enumerate(sizes)]


def stack_pasts(
    pasts: list[list[tuple[torch.Tensor, torch.Tensor]] | None], length: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, every row's cache right-padded to ``length`` (the padding is masked out). Rows
    that all continue one parent share its tensors, broadcast rather than copied."""
    template = next(p for p in pasts if p is not None)
    if all(p is template for p in pasts) and template[0][0].shape[2] == length:
        return [(k.expand(len(pasts), -1, -1, -1), v.expand(len(pasts), -1, -1, -1)) for k, v in template]
    sharing: dict[int, tuple[list[tuple[torch.Tensor, torch.Tensor]], list[int]]] = {}  # a parent's rows
    for r, past in enumerate(pasts):
        if past is not None:
            sharing.setdefault(id(past), (past, []))[1].append(r)
    stacked = []
    for layer, (keys, values) in enumerate(template):
        shape = (len(pasts), keys.shape[1], length, keys.shape[3])
        k_out, v_out = keys.new_zeros(shape), values.new_zeros(shape)
        for past, rows in sharing.values():  # one copy per parent, broadcast over its rows
            k, v = past[layer]
            at = torch.tensor(rows, device=k.device)
            k_out[at, :, : k.shape[2]] = k
            v_out[at, :, : v.shape[2]] = v
        stacked.append((k_out, v_out))
    return stacked
