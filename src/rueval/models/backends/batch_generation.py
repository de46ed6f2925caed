"""Batched generation for `hf:`: continuous batching over one key/value cache, shared prefixes prefilled once.

The running rows share one cache (per layer: rows x heads x columns x head size). Every decoding step
appends one column to every row; a row's tokens sit in its own columns and the rest are holes, masked
out by a 2D attention mask, while each row's positions are given explicitly, so rows of any length and
age step together. A row that finishes (its end token, a stop sequence, its budget) hands its text on
at once and goes idle; waiting prompts join in groups once a quarter of the places are free: the group
is split into runs that share a token prefix (TAPE's episodes, lm-eval's ``first_n`` demonstrations, a
shared instruction), each run's prefix is forwarded once (or cut from a small cache of recent
prefixes) and its members' own tails are forwarded on top of it, left-padded, in one pass; the group
then takes idle rows' places if they fit, else one new cache holds the live rows (the columns they use)
and the group's, the shorter left-padded, with room for the next groups to take idle places again.
With cascade attention (``cascade``: the model's attention can be swapped), a run's shared prefix of at
least ``CASCADE_MIN`` tokens is not copied into its rows: it is held once (``Row.shared``) and every
forward reads it once for the rows that share it (rueval.models.backends.cascade_attention); the cache
then holds only each row's own tail and generated tokens.

Each row checks its own stop sequences and budget and samples from its own generator (seeded as in
one-prompt-at-a-time mode), so a text never depends on its batch-mates beyond the last bits of the
logits that a batch's shape changes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from rueval.models.backends.cascade_attention import shared_prefixes
from rueval.models.backends.prefix_tree import stack_pasts
from rueval.models.backends.sampling import draw, request_seed
from rueval.models.base import Generation

MIN_SHARED = 8  # a run shares a prefix only if it is at least this many tokens (else each tail is whole)
# a shared prefix at least this long is kept once, read by cascade attention (shorter: copied into each row)
CASCADE_MIN = 64
PREFIXES_KEPT = 8  # recent prefixes' caches kept for later groups of the same episode
JOIN_SHARE = 4  # rows join when a quarter of the places are free (each join copies the running cache)

# (input_ids, cache, 2D mask, position_ids, **attention arguments) -> each row's last logits (float32)
Step = Callable[..., torch.Tensor]
Past = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values): rows x heads x columns x size


class GrowingLayer(DynamicLayer):
    """A cache layer whose columns are allocated ahead (``capacity``): appending a step writes into the
    buffer rather than copying the whole cache, as concatenation does. Given no keys, the buffer is made
    on the first update."""

    def __init__(self, capacity: int, keys: torch.Tensor | None = None, values: torch.Tensor | None = None):
        super().__init__()
        self.capacity, self.length = capacity, 0
        if keys is not None and values is not None:
            self._allocate(keys, values)
            self._write(keys, values)

    def _allocate(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        self.buffer_keys = keys.new_zeros((*keys.shape[:2], self.capacity, keys.shape[3]))
        self.buffer_values = values.new_zeros((*values.shape[:2], self.capacity, values.shape[3]))
        self.device, self.is_initialized = keys.device, True

    def _write(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        end = self.length + keys.shape[2]
        if end > self.capacity:  # sized for every row's budget: reaching it is a bug
            raise RuntimeError("the generation cache is full")
        self.buffer_keys[:, :, self.length : end] = keys
        self.buffer_values[:, :, self.length : end] = values
        self.length = end
        self.keys, self.values = self.buffer_keys[:, :, :end], self.buffer_values[:, :, :end]

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self._allocate(key_states, value_states)
        self._write(key_states, value_states)
        return self.keys, self.values

    @classmethod
    def aligned(cls, parts: Sequence[tuple[torch.Tensor, torch.Tensor]], width: int, capacity: int) -> GrowingLayer:
        """The rows of several caches in one, each right-aligned at column ``width`` (the columns left of a
        shorter one stay zero, masked out)."""
        layer = cls(capacity)
        keys, values = parts[0]
        rows = sum(k.shape[0] for k, _ in parts)
        layer._allocate(keys.new_empty((rows, *keys.shape[1:])), values.new_empty((rows, *values.shape[1:])))
        top = 0
        for k, v in parts:
            layer.buffer_keys[top : top + k.shape[0], :, width - k.shape[2] : width] = k
            layer.buffer_values[top : top + v.shape[0], :, width - v.shape[2] : width] = v
            top += k.shape[0]
        layer.length = width
        layer.keys, layer.values = layer.buffer_keys[:, :, :width], layer.buffer_values[:, :, :width]
        return layer


def growing_cache(past: Past, capacity: int) -> DynamicCache:
    """A cache holding ``past`` with room for ``capacity`` columns in all."""
    cache = DynamicCache()
    cache.layers = [GrowingLayer(capacity, keys, values) for keys, values in past]
    cache.layer_class_to_replicate = partial(GrowingLayer, capacity)
    return cache


def past_of(cache: DynamicCache) -> Past:
    return [(layer.keys, layer.values) for layer in cache.layers]


@dataclass(eq=False)
class Row:
    index: int  # the request's place in the call
    request: Generation
    prompt: list[int]
    generator: torch.Generator | None  # a sampled request's own stream
    generated: list[int] = field(default_factory=list)
    done: bool = False  # finished: its place is idle until the batch is next compacted
    shared: Past | None = None  # its prompt's start, kept once for the rows that share it (not in the cache)


@dataclass
class Budget:
    """How many rows may run together and how large their cache may grow (columns x rows)."""

    rows: int
    prefill_tokens: int  # tail tokens forwarded in one joining pass
    cache_tokens: int


class BatchGenerator:
    """Generates every request's text; ``finish(row, text)`` is called as each row leaves."""

    def __init__(
        self,
        step: Step,
        budget: Budget,
        eos: frozenset[int],
        decode: Callable[[list[int]], str],
        stopped: Callable[[list[Row]], list[bool]],
        device: torch.device,
        cascade: bool = False,
    ):
        self.step, self.budget, self.eos, self.decode, self.stopped = step, budget, eos, decode, stopped
        self.device, self.cascade = device, cascade  # cascade: long shared prefixes kept once (cascade_attention)
        self.prefixes: OrderedDict[tuple[int, ...], Past] = OrderedDict()
        self.rows: list[Row] = []
        self.cache: DynamicCache | None = None
        self.mask = torch.zeros(0, 0, dtype=torch.long)
        self.prefilled = 0  # prompt tokens forwarded (shared prefixes once)

    def run(self, waiting: list[Row], finish: Callable[[Row, str], None]) -> None:
        """Finished rows stay in the batch, idle, until rows join or they are half of it: dropping a row
        copies the whole cache, and short answers finish at nearly every step."""
        waiting = list(reversed(waiting))  # popped from the end, in the given (sorted) order
        while waiting or self.live:
            free = self.budget.rows - len(self.live)
            if waiting and (not self.live or free * JOIN_SHARE >= self.budget.rows or len(waiting) <= free):
                self._join(waiting)
            else:
                if 2 * len(self.live) <= len(self.rows):  # compacted: only the live rows left
                    self._rebuild([], [], torch.zeros(0, 0, dtype=torch.long))
                self._decode()
            self._leave(finish)

    @property
    def live(self) -> list[Row]:
        return [row for row in self.rows if not row.done]

    # -- joining -------------------------------------------------------------------------------------
    def _join(self, waiting: list[Row]) -> None:
        """The next waiting rows that fit, prefilled (shared prefixes once) and merged into the batch."""
        group: list[Row] = []
        width, live = self.mask.shape[1], self.live
        remaining = max((r.request.max_new_tokens - len(r.generated) for r in live), default=0)
        longest = longest_tail = 0
        while waiting and len(live) + len(group) < self.budget.rows:
            row = waiting[-1]
            # its own tokens, roughly: those it does not share with the row before it
            tail = len(row.prompt) - (common_length(group[-1].prompt, row.prompt) if group else 0)
            longest, longest_tail = max(longest, len(row.prompt)), max(longest_tail, tail)
            columns = max(width, longest) + max(remaining, row.request.max_new_tokens)
            if group and (
                (len(live) + len(group) + 1) * columns > self.budget.cache_tokens
                or (len(group) + 1) * longest_tail > self.budget.prefill_tokens
            ):
                break
            group.append(waiting.pop())
            remaining = max(remaining, row.request.max_new_tokens)
        tails = []  # (row, its tokens before its own tail, that prefix's past if copied into its columns)
        in_use = {tuple(row.prompt[: row.shared[0][0].shape[2]]): row.shared for row in live if row.shared}
        for start, end, shared in shared_runs([row.prompt for row in group]):
            tokens = tuple(group[start].prompt[:shared])
            prefix = in_use.get(tokens) or self._prefix(tokens)
            kept = prefix is not None and self.cascade and shared >= CASCADE_MIN
            for row in group[start:end]:
                row.shared = prefix if kept else None
                tails.append((row, shared, None if kept else prefix))
        past_width = max((shared for _, shared, past in tails if past), default=0)
        tail_width = max(len(row.prompt) - shared for row, shared, _ in tails)
        rows = len(group)
        input_ids = torch.zeros(rows, tail_width, dtype=torch.long)
        positions = torch.zeros(rows, tail_width, dtype=torch.long)
        mask = torch.zeros(rows, past_width + tail_width, dtype=torch.long)
        for r, (row, shared, past) in enumerate(tails):
            own = row.prompt[shared:]
            input_ids[r, tail_width - len(own) :] = torch.tensor(own)
            positions[r, tail_width - len(own) :] = torch.arange(shared, len(row.prompt))
            mask[r, : shared if past else 0] = 1
            mask[r, past_width + tail_width - len(own) :] = 1
        pasts = [past for _, _, past in tails]
        budget = max(row.request.max_new_tokens for row in group)
        stacked = stack_pasts(pasts, past_width) if any(pasts) else []
        cache = growing_cache(stacked, past_width + tail_width + budget)
        logits = self.step(input_ids, cache, mask, positions, **self._attention(group))
        self.prefilled += sum(len(row.prompt) - shared for row, shared, _ in tails)
        self._append(group, logits)
        self._merge(group, cache, mask)

    def _prefix(self, tokens: tuple[int, ...]) -> Past | None:
        """The cache of a shared prefix (one row): cut from a kept prefix that starts with it, or forwarded
        now on top of the longest start it shares with one (an earlier group of the same episode)."""
        if not tokens:
            return None
        shares = ((kept, common_length(kept, tokens)) for kept in self.prefixes)
        kept, base = max(shares, key=lambda pair: pair[1], default=((), 0))
        past = [(k[:, :, :base], v[:, :, :base]) for k, v in self.prefixes[kept]] if base else []
        if base < len(tokens):
            cache = growing_cache(past, len(tokens))
            positions = torch.arange(base, len(tokens)).unsqueeze(0)
            ones = torch.ones(1, len(tokens), dtype=torch.long)
            self.step(torch.tensor([tokens[base:]]), cache, ones, positions)
            self.prefilled += len(tokens) - base
            past = past_of(cache)
            self.prefixes[tokens] = past
            while len(self.prefixes) > PREFIXES_KEPT:
                self.prefixes.popitem(last=False)
        else:
            self.prefixes.move_to_end(kept)
        return past

    def _merge(self, group: list[Row], cache: DynamicCache, mask: torch.Tensor) -> None:
        """The joined rows in finished rows' places if they fit there (``_fill_idle``), else in a cache made
        anew (``_rebuild``)."""
        if self.cache is None or not self.live:
            self.rows, self.cache, self.mask = group, cache, mask
        elif not self._fill_idle(group, cache, mask):
            self._rebuild(group, past_of(cache), mask)

    def _fill_idle(self, group: list[Row], cache: DynamicCache, mask: torch.Tensor) -> bool:
        """Write the joined rows into finished rows' places, right-aligned, when there are enough of them and
        the running cache has the columns the joined rows' budgets need: the running rows are not copied."""
        assert self.cache is not None
        idle = [r for r, row in enumerate(self.rows) if row.done][: len(group)]
        width, new = self.mask.shape[1], mask.shape[1]
        layers = [layer for layer in self.cache.layers if isinstance(layer, GrowingLayer)]
        assert len(layers) == len(self.cache.layers)
        needed = max(row.request.max_new_tokens - len(row.generated) for row in group)
        if len(idle) < len(group) or new > width or width + needed > layers[0].capacity:
            return False
        slots = torch.tensor(idle, device=self.device)
        for layer, (keys, values) in zip(layers, past_of(cache), strict=True):
            layer.buffer_keys[slots, :, width - new : width] = keys
            layer.buffer_values[slots, :, width - new : width] = values
        self.mask[idle] = 0
        self.mask[idle, width - new :] = mask
        for slot, row in zip(idle, group, strict=True):
            self.rows[slot] = row
        return True

    # -- stepping ------------------------------------------------------------------------------------
    def _decode(self) -> None:
        assert self.cache is not None
        rows = self.rows
        input_ids = torch.tensor([[row.generated[-1]] for row in rows])
        positions = torch.tensor([[len(row.prompt) + len(row.generated) - 1] for row in rows])
        self.mask = torch.cat([self.mask, torch.ones(len(rows), 1, dtype=torch.long)], dim=1)
        logits = self.step(input_ids, self.cache, self.mask, positions, **self._attention(rows))
        self._append(rows, logits)

    def _attention(self, rows: list[Row]) -> dict:
        """The forward's cascade-attention arguments: each live row's shared prefix (none for a model whose
        attention is its own)."""
        if not self.cascade:
            return {}
        return shared_prefixes([own_columns(row) for row in rows], self.device)

    def _append(self, rows: list[Row], logits: torch.Tensor) -> None:
        """Each row's next token: the argmax, or a sampled request's draw from its own generator."""
        chosen = logits.argmax(dim=-1)
        sampled: dict[tuple[float, float], list[int]] = {}
        for r, row in enumerate(rows):
            if row.generator is not None and not row.done:
                sampled.setdefault((row.request.temperature or 1.0, row.request.top_p), []).append(r)
        for (temperature, top_p), at in sampled.items():
            drawn = draw(logits[at], [rows[r].generator for r in at], temperature, top_p)
            chosen[at] = drawn
        for row, token in zip(rows, chosen.tolist(), strict=True):
            if not row.done:
                row.generated.append(token)

    def _leave(self, finish: Callable[[Row, str], None]) -> None:
        """Rows that are done hand their texts on and go idle."""
        live = self.live
        with_stops = [row for row in live if row.request.stop]
        stopped = {id(row) for row, hit in zip(with_stops, self.stopped(with_stops), strict=True) if hit}
        for row in live:
            if row.generated[-1] in self.eos or len(row.generated) >= row.request.max_new_tokens or id(row) in stopped:
                row.done = True
                tokens = row.generated[: row.request.max_new_tokens]
                finish(row, self.decode(tokens[:-1] if tokens and tokens[-1] in self.eos else tokens))

    def _rebuild(self, group: list[Row], past: Past, mask: torch.Tensor) -> None:
        """A new cache holding the live rows (the columns they use) and a joining group's rows, right-aligned,
        with room for every row's budget and, within the cache budget, as many columns again, so that
        later groups can take finished rows' places instead of copying the batch once more."""
        assert self.cache is not None
        keep = [r for r, row in enumerate(self.rows) if not row.done]
        rows = [self.rows[r] for r in keep] + group
        if not rows:
            self.rows, self.cache, self.mask = [], None, torch.zeros(0, 0, dtype=torch.long)
            return
        kept_mask = self.mask[keep]
        used = int(kept_mask.any(dim=0).nonzero()[0]) if keep else kept_mask.shape[1]
        kept_mask = kept_mask[:, used:]
        width = max(kept_mask.shape[1], mask.shape[1])
        budget = max(row.request.max_new_tokens - len(row.generated) for row in rows)
        capacity = max(width + budget, min(width + 2 * budget, self.budget.cache_tokens // len(rows)))
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        layers = []
        for n, (keys, values) in enumerate(past_of(self.cache)):
            parts = [(keys[:, :, used:].index_select(0, index), values[:, :, used:].index_select(0, index))]
            layers.append(GrowingLayer.aligned(parts + past[n : n + 1], width, capacity))
        self.cache = DynamicCache()
        self.cache.layers = layers
        self.mask = torch.zeros(len(rows), width, dtype=torch.long)
        self.mask[: len(keep), width - kept_mask.shape[1] :] = kept_mask
        self.mask[len(keep) :, width - mask.shape[1] :] = mask
        self.rows = rows


def shared_runs(prompts: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
    """The prompts (in order) split into runs ``(start, end, shared)`` that each forward a common prefix of
    ``shared`` tokens once, chosen to save the most tokens ((members - 1) x shared per run); a run's prefix
    leaves every member at least one token of its own (its last is forwarded to give the first logits)."""
    n = len(prompts)
    adjacent = [common_length(prompts[i], prompts[i + 1]) for i in range(n - 1)]
    best = [0] * (n + 1)  # best[i]: tokens saved by the first i prompts
    cut = [0] * (n + 1)
    shared_of: dict[tuple[int, int], int] = {}
    for end in range(1, n + 1):
        best[end], cut[end] = best[end - 1], end - 1
        common = len(prompts[end - 1]) - 1
        for start in range(end - 2, -1, -1):  # the run prompts[start:end]
            common = min(common, adjacent[start], len(prompts[start]) - 1)
            if common < MIN_SHARED:
                break
            shared_of[(start, end)] = common
            if best[start] + (end - start - 1) * common > best[end]:
                best[end], cut[end] = best[start] + (end - start - 1) * common, start
    runs, end = [], n
    while end > 0:
        start = cut[end]
        runs.append((start, end, shared_of.get((start, end), 0)))
        end = start
    return runs[::-1]


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def own_columns(row: Row) -> tuple[Past, int] | None:
    """A live row's shared prefix and how many columns its own tokens take in the batch cache after this
    step's (its prompt's tail and its tokens generated, the last being forwarded now)."""
    if row.done or row.shared is None:
        return None
    return row.shared, len(row.prompt) - row.shared[0][0].shape[2] + len(row.generated)


def new_rows(requests: Sequence[Generation], prompts: Sequence[list[int]], device: torch.device) -> list[Row]:
    """A row per request; a sampled request draws from a generator seeded as one prompt at a time would."""
    rows = []
    for i, (request, prompt) in enumerate(zip(requests, prompts, strict=True)):
        sample = request.temperature > 0 or request.top_p < 1
        generator = torch.Generator(device=device).manual_seed(request_seed(request)) if sample else None
        rows.append(Row(i, request, prompt, generator))
    return rows
