"""What a language model is asked to compute (requests), what a backend declares it can compute
(capabilities), and the backend interface."""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rueval.core.errors import RuevalError


@dataclass(frozen=True)
class Message:
    """One turn of a conversation, as chat APIs take them."""

    role: str  # system, user or assistant
    content: str


# What a request is asked after: text, or chat messages for a backend that declares chat_messages
Prompt = str | tuple[Message, ...]


def prompt_text(prompt: Prompt) -> str:
    """A prompt as text: itself, or chat messages as JSON (as lm-evaluation-harness logs a chat
    request; sample logs, the engine's order and the servers' routing read it so)."""
    if isinstance(prompt, str):
        return prompt
    return json.dumps([asdict(message) for message in prompt], ensure_ascii=False)


def text_of(prompt: Prompt) -> str:
    """The prompt of a backend that takes text: chat messages go only to those declaring chat_messages."""
    if not isinstance(prompt, str):
        raise TypeError("chat messages sent to a backend that takes text prompts")
    return prompt


@dataclass(frozen=True)
class Loglikelihood:
    """log P(continuation | context), summed over the continuation's tokens.

    An empty context scores the whole text after the model's start token: that is TAPE's
    perplexity scoring (Taktasheva et al., 2022, Equation 1: the candidate prompt with the
    lowest mean negative log-probability per token wins). After chat messages, the continuation
    is the assistant's (unfinished) answer.
    """

    context: Prompt
    continuation: str
    # lm-eval's loglikelihood_rolling (an empty context): the text tokenized as a whole, special tokens and all,
    # after the prefix token; only lm-eval's start-token policies (--bos) tell it from an empty context
    rolling: bool = False

    def __post_init__(self) -> None:
        if self.rolling and self.context:
            raise ValueError("a rolling log-likelihood request scores a whole text: its context is empty")


@dataclass(frozen=True)
class LoglikelihoodResult:
    logprob: float  # summed over the continuation's tokens
    n_tokens: int  # continuation tokens scored
    greedy: bool  # every continuation token was the model's argmax


@dataclass(frozen=True)
class Generation:
    """Text generated after ``prompt``, cut at the first stop sequence."""

    prompt: Prompt
    max_new_tokens: int
    stop: tuple[str, ...] = ()
    top_p: float = 1.0  # < 1 samples with nucleus sampling (TAPE: 0.8); 1.0 with temperature 0 is greedy
    temperature: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class TokenLogprobs:
    """Each token's log-probability in ``text``, scored whole after the model's start token (the text's
    first tokens where it is longer than the model's window); with ``distribution``, also the mean and the
    standard deviation of log p over the whole next-token distribution at each of those positions
    (mu = sum p log p, sigma = sqrt(sum p (log p)^2 - mu^2): Min-K%++'s statistics), which only a backend
    declaring ``token_distribution`` computes."""

    text: str
    distribution: bool = False

    def __post_init__(self) -> None:
        if not self.text:
            raise ValueError("a token log-probabilities request needs a non-empty text")


@dataclass(frozen=True)
class TokenLogprobsResult:
    logprobs: tuple[float, ...]  # one per scored token, in the text's order
    means: tuple[float, ...] = ()  # with distribution: mu at each scored token's position, else empty
    deviations: tuple[float, ...] = ()  # with distribution: sigma there, else empty


Request = Loglikelihood | Generation | TokenLogprobs

# Called by a backend as results finish: (index into the requests, result) pairs. The engine
# commits each call to the request cache, so a killed run loses only the batch in flight.
OnDone = Callable[[list[tuple[int, Any]]], None]


class ImpossibleAnswer(RuevalError):
    """A backend's answer no model can give: a log-probability that is not a number, NaN, infinite
    or positive, a token count that is not a positive whole number. Never cached."""


def describe(request: Request) -> str:
    """A request in a few words, for errors: the end of its prompt, and its continuation."""
    if isinstance(request, TokenLogprobs):
        return f"the token log-probabilities of {request.text!r:.60}"
    prompt = prompt_text(request.context if isinstance(request, Loglikelihood) else request.prompt)
    shown = repr(prompt if len(prompt) <= 60 else "…" + prompt[-59:])
    if isinstance(request, Loglikelihood):
        return f"the request {shown} + {request.continuation!r:.60}"
    return f"the generation request {shown}"


def logprob_problem(value: Any) -> str | None:
    """What makes ``value`` impossible as a log-probability, or None for a finite number <= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"a log-probability that is no number ({value!r:.40})"
    if math.isnan(value) or math.isinf(value):
        return f"a log-probability of {value}"
    if value > 0:
        return f"a positive log-probability ({value:g}, a probability above 1)"
    return None


def result_problem(request: Request, result: Any) -> str | None:
    """What makes a backend's result impossible for its request, or None: a log-likelihood needs a
    log-probability (logprob_problem), a positive whole number of tokens and a true/false greedy
    flag; a generation needs text; token log-probabilities need token_logprobs_problem's."""
    if isinstance(request, TokenLogprobs):
        return token_logprobs_problem(request, result)
    if isinstance(request, Generation):
        return None if isinstance(result, str) else f"a generation that is no text ({result!r:.40})"
    if not isinstance(result, LoglikelihoodResult):
        return f"no log-likelihood result ({result!r:.40})"
    n = result.n_tokens
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return f"a token count of {n!r:.40} (expected a positive whole number)"
    if not isinstance(result.greedy, bool):
        return f"a greedy flag of {result.greedy!r:.40} (expected true or false)"
    return logprob_problem(result.logprob)


def token_logprobs_problem(request: TokenLogprobs, result: Any) -> str | None:
    """What makes ``result`` impossible for ``request``, or None: at least one log-probability, each
    possible (logprob_problem); with ``distribution``, a mean <= 0 and a finite deviation >= 0 per token."""
    if not isinstance(result, TokenLogprobsResult):
        return f"no token log-probabilities result ({result!r:.40})"
    values = result.logprobs
    if not isinstance(values, tuple) or not values:
        return f"token log-probabilities of {values!r:.40} (expected one or more)"
    expected = len(values) if request.distribution else 0
    for name, column in (("means", result.means), ("deviations", result.deviations)):
        if not isinstance(column, tuple) or len(column) != expected:
            return f"{name} of {column!r:.40} (expected {expected} of them)"
    for value in (*values, *result.means):
        if problem := logprob_problem(value):
            return problem
    for value in result.deviations:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
            return f"a standard deviation of {value!r:.40} (expected a finite number >= 0)"
    return None


def check_generation_budget(new_tokens: int, max_length: int | None) -> None:
    """A generation budget that leaves no room for a prompt in the model's window is refused."""
    if max_length is not None and new_tokens >= max_length:
        raise RuevalError(
            f"{new_tokens} new tokens do not fit the model's window of {max_length} tokens beside a prompt: "
            "give --gen_kwargs max_gen_toks a smaller number"
        )


def checked_logprob(value: Any, source: str, request: Request) -> float:
    """A log-probability read from a backend's answer (one token's); an ImpossibleAnswer naming
    ``source`` (a server) and the request unless it is a finite number <= 0."""
    problem = logprob_problem(value)
    if problem:
        raise ImpossibleAnswer(f"{source} answered {problem} for a token of {describe(request)}; not used")
    return float(value)


def encode_pair(request: Loglikelihood, tokens: Callable[[str], list[int]], start_token: int) -> tuple[list[int], int]:
    """Token ids of start + context + continuation, and the index of the first scored token.

    As lm-evaluation-harness does, the context's trailing spaces move to the continuation, and
    the continuation's tokens are those that tokenizing context + continuation adds after the
    context's own tokens."""
    if not request.continuation:
        raise ValueError("a log-likelihood request needs a non-empty continuation")
    context, continuation = move_spaces(text_of(request.context), request.continuation)
    context_ids = tokens(context) if context else []
    whole = tokens(context + continuation)
    return [start_token, *context_ids, *whole[len(context_ids) :]], 1 + len(context_ids)


def move_spaces(context: str, continuation: str) -> tuple[str, str]:
    """The context's trailing spaces moved to the start of the continuation (lm-evaluation-harness's rule)."""
    spaces = len(context) - len(context.rstrip())
    return (context[:-spaces], context[-spaces:] + continuation) if spaces else (context, continuation)


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """The text before the first stop sequence."""
    end = min((text.find(s) for s in stop if s and s in text), default=len(text))
    return text[:end]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can compute, declared by every backend: the LM solver plans only requests its
    backend declares, in the form it declares (text or chat messages)."""

    loglikelihood: bool = False  # log P(continuation | text context): options by log-likelihood, --scoring ppl
    generation: bool = False  # text generated after a prompt
    chat_messages: bool = False  # prompts are chat messages (Message tuples), rendered by the backend
    # after chat messages, an option as the assistant's answer scored by its prompt logprobs (else options are
    # answered by generating); None: the backend's server says, asked once when first needed (``settle``)
    chat_logprobs: bool | None = False
    token_logprobs: bool = False  # each token's log-probability in a text (TokenLogprobs): Min-K%, perplexity, zlib
    token_distribution: bool = False  # and the next-token distribution's mean and deviation of log p (Min-K%++)
    tokenizer: Any = None  # the model's own tokenizer, if the backend has one (its chat template renders prompts)
    parameters: int | None = None  # the model's size, if known
    max_length: int | None = None  # the most tokens it takes, prompt and generated together, if known


class LanguageModel(ABC):
    """A backend: computes requests in batches, reporting each finished batch to ``on_done``
    (results it never reports are recorded when the call returns). ``identity`` names the exact
    model (hub id and commit, or path and content hash) so cached results are never reused for
    another model; ``capabilities`` declare what it computes (known when it is made, asking no
    server)."""

    identity: str

    @property
    def generation_mode(self) -> str | None:
        """How the backend generates, where its texts depend on it (hf:'s "batched" or "one-at-a-time"):
        recorded in run.json, in the fingerprint and in the request cache key of generations."""
        return None

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    def settle(self) -> Capabilities:
        """The capabilities with nothing left open: a backend that declared ``chat_logprobs=None`` asks its
        server now (once); the others have nothing to ask."""
        return self.capabilities

    @abstractmethod
    def loglikelihood(
        self, requests: Sequence[Loglikelihood], on_done: OnDone | None = None
    ) -> list[LoglikelihoodResult]: ...

    @abstractmethod
    def generate(self, requests: Sequence[Generation], on_done: OnDone | None = None) -> list[str]: ...

    def token_logprobs(
        self, requests: Sequence[TokenLogprobs], on_done: OnDone | None = None
    ) -> list[TokenLogprobsResult]:
        """Each text's token log-probabilities; only a backend that declares ``token_logprobs`` computes them
        (and their distributions' statistics only one that declares ``token_distribution``)."""
        raise RuevalError(f"{self.identity} gives no token log-probabilities of a text")
