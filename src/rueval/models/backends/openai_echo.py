"""The prompt logprobs an OpenAI-compatible ``/v1/completions`` server echoes (``echo=true, logprobs=1``), read
for the tokens a request scores: by position for token-id prompts, by the character-boundary rule
(rueval.models.backends.char_boundary) for text prompts. Each value is checked as it is read (checked_logprob).
A log-likelihood sums them; a text's token log-probabilities (TokenLogprobs) are them, one by one."""

from __future__ import annotations

from rueval.core.errors import RuevalError
from rueval.models.backends.char_boundary import continuation_positions
from rueval.models.base import Loglikelihood, checked_logprob

GREEDY_TOLERANCE = 1e-6  # logprobs of the chosen and the top token arrive as rounded JSON floats

Scored = tuple[list[float], bool]  # the scored tokens' logprobs, and whether each was the server's top choice


def scored_ids(choice: dict, url: str, model: str, request: Loglikelihood, ids: list[int], first: int) -> Scored:
    """A token-id prompt ``ids`` echoed: its tokens from ``first`` on."""
    logprobs = found if isinstance(found := choice.get("logprobs"), dict) else {}
    values, tops = logprobs.get("token_logprobs"), logprobs.get("top_logprobs")
    if not isinstance(values, list) or not isinstance(tops, list) or min(len(values), len(tops)) < len(ids):
        raise no_logprobs(url, model)
    return _scored(url, model, list(range(first, len(ids))), values, tops, request)


def scored_text(choice: dict, url: str, model: str, request: Loglikelihood, generated: int) -> Scored:
    """A text prompt echoed: the continuation's tokens by the character-boundary rule; its last ``generated``
    tokens are the ones the server generated after it."""
    logprobs = found if isinstance(found := choice.get("logprobs"), dict) else {}
    tokens = logprobs.get("tokens") or []
    values, tops = logprobs.get("token_logprobs") or [], logprobs.get("top_logprobs") or []
    n_prompt = len(tokens) - generated
    echoed = n_prompt > 0 and values and tops and len(values) == len(tops) == len(tokens)
    if echoed and not all(isinstance(token, str) for token in tokens):
        raise RuevalError(f"the server at {url} answered token texts that are not text: {tokens[:5]!r:.80}")
    if not echoed:
        raise no_logprobs(url, model)
    return _scored(url, model, continuation_positions(tokens[:n_prompt], request, url), values, tops, request)


def _scored(url: str, model: str, positions: list[int], values: list, tops: list, request: Loglikelihood) -> Scored:
    scored, greedy = [], True
    source = f"the server at {url}"
    for i in positions:
        if values[i] is None and i == 0:  # the first prompt token: nothing predicts it
            continue
        if values[i] is None or not tops[i] or not isinstance(tops[i], dict):
            raise no_logprobs(url, model)
        value = checked_logprob(values[i], source, request)
        top = max(checked_logprob(v, source, request) for v in tops[i].values())
        greedy = greedy and value >= top - GREEDY_TOLERANCE
        scored.append(value)
    if not scored:
        raise RuevalError(
            f"the server at {url} gave no logprob for any token of the continuation "
            f"{request.continuation!r} after {request.context!r}: its first token starts the prompt; "
            "pass the model's tokenizer to score by token ids"
        )
    return scored, greedy


def no_logprobs(url: str, model: str) -> RuevalError:
    return RuevalError(
        f"the server at {url} returned no prompt logprobs for '{model}' (asked with echo=true, "
        "logprobs=1), which scoring needs; vLLM returns them on /v1/completions (keep --max-logprobs >= 1); "
        "a server without them can run generation tasks only"
    )
