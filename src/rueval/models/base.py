"""What a language model is asked to compute (requests) and the backend interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Loglikelihood:
    """log P(continuation | context), summed over the continuation's tokens.

    An empty context scores the whole text after the model's start token: that is TAPE's
    perplexity scoring (Taktasheva et al., 2022, Equation 1: the candidate prompt with the
    lowest mean negative log-probability per token wins).
    """

    context: str
    continuation: str


@dataclass(frozen=True)
class LoglikelihoodResult:
    logprob: float  # summed over the continuation's tokens
    n_tokens: int  # continuation tokens scored
    greedy: bool  # every continuation token was the model's argmax


@dataclass(frozen=True)
class Generation:
    """Text generated after ``prompt``, cut at the first stop sequence."""

    prompt: str
    max_new_tokens: int
    stop: tuple[str, ...] = ()
    top_p: float = 1.0  # < 1 samples with nucleus sampling (TAPE: 0.8); 1.0 with temperature 0 is greedy
    temperature: float = 0.0
    seed: int = 0


Request = Loglikelihood | Generation

# Called by a backend as results finish: (index into the requests, result) pairs. The engine
# commits each call to the request cache, so a killed run loses only the batch in flight.
OnDone = Callable[[list[tuple[int, Any]]], None]


def encode_pair(request: Loglikelihood, tokens: Callable[[str], list[int]], start_token: int) -> tuple[list[int], int]:
    """Token ids of start + context + continuation, and the index of the first scored token.

    As lm-evaluation-harness does, the context's trailing spaces move to the continuation, and
    the continuation's tokens are those that tokenizing context + continuation adds after the
    context's own tokens."""
    if not request.continuation:
        raise ValueError("a log-likelihood request needs a non-empty continuation")
    context, continuation = request.context, request.continuation
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    context_ids = tokens(context) if context else []
    whole = tokens(context + continuation)
    return [start_token, *context_ids, *whole[len(context_ids) :]], 1 + len(context_ids)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """The text before the first stop sequence."""
    end = min((text.find(s) for s in stop if s and s in text), default=len(text))
    return text[:end]


class LanguageModel(ABC):
    """A backend: computes requests in batches, reporting each finished batch to ``on_done``
    (results it never reports are recorded when the call returns). ``identity`` names the exact
    model (hub id and commit, or path and content hash) so cached results are never reused for
    another model."""

    identity: str

    @abstractmethod
    def loglikelihood(
        self, requests: Sequence[Loglikelihood], on_done: OnDone | None = None
    ) -> list[LoglikelihoodResult]: ...

    @abstractmethod
    def generate(self, requests: Sequence[Generation], on_done: OnDone | None = None) -> list[str]: ...
