"""A run's requests in tokens, for its progress line: the count it shows and its ETA
(rueval.core.progress.Counter).

The engine computes each kind of request in its own sorted order, and the backend forwards a
prefix shared with the request before it once (hf's prefix tree for log-likelihoods, its batched
generation for prompts): a request counts the tokens of the rest of its text, and a generation
its budget (max_new_tokens, the most it may take) as well. Tokens are counted with the backend's
tokenizer when it declares a fast one (they tokenize a batch at once), else estimated from the
text's length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rueval.models.base import Generation, Request

# What a generated token takes in the time of a scored prompt token, until a run has timed its own
# generations: 5.3 measured by benchmarks/bench_eta.py (README's main command, the tiny model, hf:'s
# batched generation, the 2-core CPU machine; docs/benchmarks.md)
GENERATED_TOKEN_COST = 5.0
# Russian text per token without a tokenizer: the tiny model's BPE measures 2.6 on the bundled samples
# (its tokens per second are learned in the same unit, so only the weight of budgets against prompts depends on it)
CHARS_PER_TOKEN = 2.6
WORD = 32  # the most characters a shared prefix is moved back to the start of its word


@dataclass(frozen=True)
class Tokens:
    """A request's tokens: those of its prompt not shared with the request before it, and its budget."""

    prompt: int
    new: int = 0

    @property
    def shown(self) -> int:
        return self.prompt + self.new

    @property
    def cost(self) -> float:
        """Its time in prompt tokens' time."""
        return self.prompt + GENERATED_TOKEN_COST * self.new


def request_tokens(
    parts: Sequence[tuple[Sequence[Request], Callable[[Any], str]]], tokenizer: Any
) -> dict[Request, Tokens]:
    """Each request's Tokens; ``parts`` are the engine's sorted parts, each with the text it is sorted by."""
    requests, rests = [], []
    for part, text_of in parts:
        previous = ""
        for request in part:
            text = text_of(request)
            requests.append(request)
            rests.append(text[_word_start(text, _common_prefix(previous, text)) :])
            previous = text
    counts = _token_counts(rests, tokenizer)
    return {
        request: Tokens(n, request.max_new_tokens if isinstance(request, Generation) else 0)
        for request, n in zip(requests, counts, strict=True)
    }


def _token_counts(texts: list[str], tokenizer: Any) -> list[int]:
    """Each text's tokens, each distinct text tokenized once (a query's rest recurs in every episode)."""
    distinct = list(dict.fromkeys(texts))
    if distinct and getattr(tokenizer, "is_fast", False):
        counts = dict(zip(distinct, map(len, tokenizer(distinct, add_special_tokens=False)["input_ids"]), strict=True))
    else:
        counts = {text: round(len(text) / CHARS_PER_TOKEN) for text in distinct}
    return [counts[text] for text in texts]


def _word_start(text: str, cut: int) -> int:
    """``cut`` moved back to the whitespace before its word, if one is near: a token that ``cut`` would
    split (" нет" after " да") is not shared, and tokenizers start tokens at spaces."""
    space = max(text.rfind(" ", 0, cut), text.rfind("\n", 0, cut))
    return space if 0 <= space and cut - space <= WORD else cut


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix, found by halving (slices compare in C; a loop over
    characters would take seconds over a run's long few-shot prompts)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
