"""Chat-completions servers (`-m openai-chat:MODEL --base-url URL`): servers that only speak
``/v1/chat/completions`` (vLLM's chat endpoint, llama.cpp server, hosted APIs). The servers, the
HTTP client, the dispatcher and the cache identity are the `openai:` backend's; only the requests
differ.

A context reaches this backend as its chat messages (``Message`` tuples: the solver's plan step
builds the system, user and assistant turns, and the server renders them with its own template).

Options are scored in one of two ways, chosen once per run (``scoring``; with ``auto`` the backend
declares ``chat_logprobs=None`` and asks its first server once, when the solver first needs it):

- ``logprobs``: the option is sent as the assistant's message, continued rather than closed
  (vLLM's ``continue_final_message``), and scored by the prompt logprobs of its tokens (vLLM's
  ``prompt_logprobs`` extension). Which prompt tokens are the option's follows the completions
  backend's character-boundary rule, counted from the end of the rendered prompt. This equals
  ``-m hf: --apply-chat-template`` on the same weights and template.
- ``generate``: the server generates an answer (greedy) and the solver matches it to an option,
  as MERA does; servers without prompt logprobs (hosted APIs, llama.cpp) can only be used so.

The two give different scores: the protocol is written to results.json per task.

A text's token log-probabilities (TokenLogprobs, the contamination audit's) are not given: the chat endpoint
scores a text only inside the model's template, after its role markers, so they would not be the text's own
after the start token, which `openai:` gives from the same server's ``/v1/completions``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from rueval.core.errors import RuevalError
from rueval.models.backends.openai import OpenAICompletionsModel, sampling_fields, served_at
from rueval.models.backends.openai_echo import GREEDY_TOLERANCE
from rueval.models.backends.serving import ClientError
from rueval.models.base import (
    Capabilities,
    Generation,
    Loglikelihood,
    LoglikelihoodResult,
    Message,
    OnDone,
    Prompt,
    TokenLogprobs,
    TokenLogprobsResult,
    checked_logprob,
    cut_at_stop,
)
from rueval.models.factory import CHAT_SCORINGS, ModelOptions, ModelSpec

CHAT_PATH = "/chat/completions"
log = logging.getLogger(__name__)


def payload_messages(prompt: Prompt) -> list[dict[str, str]]:
    """Chat messages as the API takes them; a text prompt is refused."""
    if isinstance(prompt, str):
        raise RuevalError(f"openai-chat: a context must be chat messages, got the text {prompt[:80]!r}")
    return [asdict(message) for message in prompt]


class OpenAIChatModel(OpenAICompletionsModel):
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint, one conversation per
    HTTP request. ``scoring``: how options are scored (CHAT_SCORINGS; ``auto`` asks the first
    server once whether it returns prompt logprobs)."""

    backend = "openai-chat"
    token_prompts = False  # the server renders the messages with the model's template
    probe = (CHAT_PATH, {"messages": [{"role": "user", "content": "0"}]})

    def __init__(self, model: str, base_url: str | Sequence[str], scoring: str = "auto", **options: Any):
        if scoring not in CHAT_SCORINGS:
            raise RuevalError(f"--chat-scoring {scoring}: expected one of {', '.join(CHAT_SCORINGS)}")
        super().__init__(model, base_url, prompts_per_request=1, **options)
        logprobs = None if scoring == "auto" else scoring == "logprobs"
        self._capabilities = Capabilities(generation=True, chat_messages=True, chat_logprobs=logprobs)

    def settle(self) -> Capabilities:
        """With --chat-scoring auto: whether options are scored by prompt logprobs, asked of the first server
        once for the whole run."""
        with self._check_lock:
            if self._capabilities.chat_logprobs is None:
                self._capabilities = replace(self._capabilities, chat_logprobs=self._serves_prompt_logprobs())
            return self._capabilities

    def _serves_prompt_logprobs(self) -> bool:
        self._check_servers()
        url = self._live_urls()[0]
        try:
            self._score(url, Loglikelihood((Message("user", "0"),), "0"))
            return True
        except (ClientError, NoPromptLogprobs) as e:
            log.warning(
                "%s gives no prompt logprobs on %s (%s): options are scored by generating the answer and "
                "matching it (protocol generate-match), which is not comparable with log-likelihood scores",
                url,
                CHAT_PATH,
                e,
            )
            return False

    # -- log-likelihood ------------------------------------------------------------------------
    def _score_chunk(self, url: str, requests: list[Loglikelihood]) -> list[LoglikelihoodResult]:
        return [self._score(url, request) for request in requests]

    def _score(self, url: str, request: Loglikelihood) -> LoglikelihoodResult:
        """The continuation as the assistant's unfinished message, scored by its prompt logprobs."""
        if not request.context:
            raise RuevalError("openai-chat: options are scored after chat messages; --scoring ppl needs openai: or hf:")
        messages = [*payload_messages(request.context), {"role": "assistant", "content": request.continuation}]
        payload = {
            "messages": messages,
            "add_generation_prompt": False,
            "continue_final_message": True,
            "prompt_logprobs": 1,
            "return_token_ids": True,
            "max_tokens": 1,
            "temperature": 0,
        }
        body = self._post(url, CHAT_PATH, payload)
        entries = body.get("prompt_logprobs")
        if not isinstance(entries, list) or not entries:
            raise NoPromptLogprobs(
                f"the server at {url} returned no prompt_logprobs for '{self.model}' on {CHAT_PATH}; "
                "vLLM returns them (keep --max-logprobs >= 1); use --chat-scoring generate for other servers"
            )
        ids = body.get("prompt_token_ids")
        tokens = [
            _prompt_token(entry, ids[i] if isinstance(ids, list) and i < len(ids) else None, url, request)
            for i, entry in enumerate(entries)
        ]
        total, greedy, n, after = 0.0, True, 0, 0
        text = ""
        # the continuation ends the prompt: its tokens are the last ones, back to the one that straddles
        # its start, and the empty-text tokens (a character's first bytes) that start at it
        for token in reversed(tokens):
            if token is None or after > len(request.continuation):
                break
            piece, logprob, top = token
            if after == len(request.continuation) and piece:
                break
            total += logprob
            greedy = greedy and logprob >= top - GREEDY_TOLERANCE
            n += 1
            after += len(piece)
            text = piece + text
        if not text.endswith(request.continuation):
            raise RuevalError(
                f"the chat prompt the server at {url} rendered does not end with the assistant's message "
                f"{request.continuation!r} (its template closes the message even with continue_final_message); "
                "use --chat-scoring generate"
            )
        return LoglikelihoodResult(total, n, greedy)

    def token_logprobs(
        self, requests: Sequence[TokenLogprobs], on_done: OnDone | None = None
    ) -> list[TokenLogprobsResult]:
        """Not given (token_logprobs is not declared): the chat endpoint scores a text only inside the model's chat
        template, after its role markers, not after the start token as hf: and openai: score it."""
        raise RuevalError(
            f"openai-chat:{self.model} gives no token log-probabilities of a text: {CHAT_PATH} scores a text only "
            "inside the chat template; use -m openai: on the server's /v1/completions"
        )

    # -- generation ----------------------------------------------------------------------------
    def _generate_chunk(self, url: str, requests: list[Generation]) -> list[str]:
        return [self._generate_one(url, request) for request in requests]

    def _generate_one(self, url: str, r: Generation) -> str:
        payload = {"messages": payload_messages(r.prompt), **sampling_fields(r)}
        choices = self._post(url, CHAT_PATH, payload).get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise RuevalError(f"the server at {url} answered {CHAT_PATH} without a message")
        return cut_at_stop(str(message.get("content") or ""), r.stop)


def open_model(spec: ModelSpec, options: ModelOptions) -> OpenAIChatModel:
    """The backend of `-m openai-chat:MODEL --base-url URL` (BACKENDS)."""
    base_url = served_at(spec, options)
    return OpenAIChatModel(
        spec.target, base_url, scoring=options.chat_scoring, concurrency=options.concurrency, timeout=options.timeout
    )


class NoPromptLogprobs(RuevalError):
    """A chat server that does not return the prompt's logprobs."""


def _prompt_token(entry: Any, token_id: Any, url: str, request: Loglikelihood) -> tuple[str, float, float] | None:
    """One prompt position of vLLM's ``prompt_logprobs`` ({token id: {logprob, rank, decoded_token}},
    the prompt's own token and the top one): (its text, its logprob, the top logprob); None for the
    first position, which nothing predicts. Without the prompt's token ids the prompt's own token is
    the one of the largest rank (the top one has rank 1). A logprob that is no number, NaN, infinite or
    positive is an ImpossibleAnswer naming the server and the request."""
    if not isinstance(entry, dict) or not entry:
        return None
    if not all(isinstance(value, dict) for value in entry.values()):
        raise RuevalError(f"the server at {url} answered prompt_logprobs entries that are not objects: {entry!r:.80}")
    own = entry.get(str(token_id)) if token_id is not None else None
    if own is None:
        own = max(entry.values(), key=lambda value: value.get("rank") if isinstance(value.get("rank"), int) else 1)
    source = f"the server at {url}"
    top = max(checked_logprob(value.get("logprob"), source, request) for value in entry.values())
    return str(own.get("decoded_token") or ""), checked_logprob(own.get("logprob"), source, request), top
