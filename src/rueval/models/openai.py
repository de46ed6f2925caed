"""OpenAI-compatible completion servers (`-m openai:MODEL --base-url URL`): vLLM, llama.cpp
server, TGI. This is how large models on GPU servers and clusters are evaluated.

Log-likelihoods come from the prompt's own token logprobs (``echo=true, logprobs=1``), so the
server must return logprobs for prompt tokens; generation uses the server's sampling.

Which echoed tokens are the continuation's (the character-boundary rule). The server tokenizes
``context + continuation`` itself and returns each token's text; a token spans the characters
from its ``text_offset`` (the sum of the earlier tokens' texts) to the next token's offset.
As in the HF backend, the context's trailing spaces count as the continuation's. The boundary
is measured from the end of the prompt, that many characters before it, so whatever a server
shows at the start cannot move it (vLLM echoes a Llama model's start token as its text,
``<s>``, which shifts every offset). A token is scored for the continuation when it
starts at or after the boundary, or when it straddles it (starts before, ends after): such a
token is the model's prediction of the continuation's first characters, and leaving it out
would drop them from the score (the continuation ``"да"`` after the context ``"Ответ: "`` is
scored as the tokens ``" д"`` and ``"а"``). Byte-level tokens that each hold part of one
character have empty texts but the last, so they all go with the character's side. The first
prompt token has no logprob (nothing precedes it): with an empty context the text is scored
from its second token on, unless the server adds a start token itself (Llama-style tokenizers
do), when every text token is scored, as the HF backend does.

With ``tokenizer=`` (a local path or hub id of the served model's tokenizer, or a tokenizer
object) prompts are sent as token ids encoded exactly as the HF backend encodes them: a start
token, the context's tokens, then the continuation's. Token boundaries are then exact and an
empty context scores every token, so results equal ``-m hf:`` on the same weights.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from http.client import HTTPException
from typing import Any

from rueval.errors import RuevalError
from rueval.models.base import (
    Generation,
    LanguageModel,
    Loglikelihood,
    LoglikelihoodResult,
    OnDone,
    cut_at_stop,
    encode_pair,
)

RETRIED_STATUS = {408, 429, 500, 502, 503, 504}  # busy or restarting servers: worth another try
MAX_BACKOFF = 30.0  # seconds
GREEDY_TOLERANCE = 1e-6  # logprobs of the chosen and the top token arrive as rounded JSON floats


class OpenAICompletionsModel(LanguageModel):
    """A model behind an OpenAI-compatible ``/v1/completions`` endpoint.

    ``concurrency`` HTTP requests run at once, each carrying up to ``prompts_per_request``
    prompts (the API takes a list). A request that fails with 408/429/5xx, a dropped connection
    or a timeout is retried up to ``max_retries`` times, waiting ``retry_delay`` seconds and
    doubling (capped at 30 s, or as the server's Retry-After says). The server is first
    contacted on the first request, so a run whose results are all cached needs no server.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 5,
        tokenizer: Any = None,
        prompts_per_request: int = 16,
        retry_delay: float = 1.0,
    ):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.prompts_per_request = max(1, prompts_per_request)
        self.retry_delay = retry_delay
        self.identity = f"openai:{model}@{self.base_url}"
        self.tokenizer = _load_tokenizer(tokenizer) if tokenizer is not None else None
        if self.tokenizer is not None:
            # token-id prompts score an empty context differently from text prompts: keep their caches apart
            name = getattr(self.tokenizer, "name_or_path", "") or type(self.tokenizer).__name__
            self.identity += f" tokenizer={name}"
            bos, eos = self.tokenizer.bos_token_id, self.tokenizer.eos_token_id
            if bos is None and eos is None:
                raise RuevalError(f"openai:{model}: the tokenizer has neither a BOS nor an EOS token to start with")
            self.start_token = bos if bos is not None else eos
        self._scoring_max_tokens = 0  # echo without generation; 1 for servers that refuse 0
        self._checked = False
        self._check_lock = threading.Lock()

    # -- requests ------------------------------------------------------------------------------
    def loglikelihood(
        self, requests: Sequence[Loglikelihood], on_done: OnDone | None = None
    ) -> list[LoglikelihoodResult]:
        """log P(continuation | context) for each request, from the server's prompt logprobs."""
        for r in requests:
            if not r.continuation:
                raise ValueError("a log-likelihood request needs a non-empty continuation")
        chunks = self._chunks(list(range(len(requests))))
        return self._run(chunks, lambda chunk: self._score_chunk([requests[i] for i in chunk]), len(requests), on_done)

    def generate(self, requests: Sequence[Generation], on_done: OnDone | None = None) -> list[str]:
        """Generated texts, cut at the first stop sequence. Prompts with the same sampling
        settings share HTTP requests; the seed goes to the server, which applies it per prompt."""
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.max_new_tokens, r.stop, r.top_p, r.temperature, r.seed), []).append(i)
        chunks = [chunk for indices in groups.values() for chunk in self._chunks(indices)]
        return self._run(
            chunks, lambda chunk: self._generate_chunk([requests[i] for i in chunk]), len(requests), on_done
        )

    def _chunks(self, indices: list[int]) -> list[list[int]]:
        """Request indices in groups of ``prompts_per_request``: one HTTP request each."""
        return [indices[i : i + self.prompts_per_request] for i in range(0, len(indices), self.prompts_per_request)]

    def _run(
        self, chunks: list[list[int]], compute: Callable[[list[int]], list], total: int, on_done: OnDone | None
    ) -> list:
        """Compute chunks ``concurrency`` at a time, each reported to ``on_done`` as it comes back;
        results in the requests' order."""
        if not chunks:
            return []
        self._check_server()
        results: list = [None] * total
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(compute, chunk): chunk for chunk in chunks}
            try:
                for future in as_completed(futures):
                    finished = list(zip(futures[future], future.result(), strict=True))
                    for i, result in finished:
                        results[i] = result
                    if on_done is not None:
                        on_done(finished)
            except BaseException:
                for future in futures:  # one failure ends the call: start nothing more
                    future.cancel()
                raise
        return results

    # -- log-likelihood ------------------------------------------------------------------------
    def _score_chunk(self, requests: list[Loglikelihood]) -> list[LoglikelihoodResult]:
        if self.tokenizer is not None:
            encoded = [encode_pair(r, self._tokens, self.start_token) for r in requests]
            prompts: list = [ids for ids, _ in encoded]
        else:
            prompts = [r.context + r.continuation for r in requests]
        while True:
            max_tokens = self._scoring_max_tokens
            payload = {"prompt": prompts, "max_tokens": max_tokens, "echo": True, "logprobs": 1, "temperature": 0}
            try:
                choices = self._completions(payload, len(prompts))
                break
            except _ClientError:
                if max_tokens == 0:  # some servers need max_tokens >= 1 even with echo
                    self._scoring_max_tokens = 1
                    continue
                raise
        if self.tokenizer is not None:
            return [self._score_ids(c, r, *pair) for c, r, pair in zip(choices, requests, encoded, strict=True)]
        return [self._score_text(c, r, max_tokens) for c, r in zip(choices, requests, strict=True)]

    def _score_text(self, choice: dict, request: Loglikelihood, generated: int) -> LoglikelihoodResult:
        """Apply the character-boundary rule of the module docstring to one echoed prompt; its
        last ``generated`` tokens are the ones the server generated after it."""
        logprobs = choice.get("logprobs") or {}
        tokens = logprobs.get("tokens") or []
        values, tops = logprobs.get("token_logprobs"), logprobs.get("top_logprobs")
        n_prompt = len(tokens) - generated
        echoed = n_prompt > 0 and values and tops and len(values) == len(tops) == len(tokens)
        if not echoed:
            raise self._no_logprobs()
        starts = [0]
        for token in tokens[:n_prompt]:
            starts.append(starts[-1] + len(token))
        context = request.context.rstrip()  # its trailing spaces go with the continuation, as in the HF backend
        continuation = request.context[len(context) :] + request.continuation
        if context and not "".join(tokens[:n_prompt]).endswith(continuation):
            raise RuevalError(
                f"the token texts from the server at {self.base_url} do not end with the continuation "
                f"{continuation!r}, so it cannot be told from the context; pass the model's tokenizer "
                "to score by token ids"
            )
        boundary = starts[n_prompt] - len(continuation) if context else 0
        scored = [i for i in range(n_prompt) if starts[i] >= boundary or starts[i + 1] > boundary]
        return self._sum(scored, values, tops, request)

    def _score_ids(self, choice: dict, request: Loglikelihood, ids: list[int], first: int) -> LoglikelihoodResult:
        logprobs = choice.get("logprobs") or {}
        values, tops = logprobs.get("token_logprobs"), logprobs.get("top_logprobs")
        if not values or not tops or len(values) < len(ids):
            raise self._no_logprobs()
        return self._sum(list(range(first, len(ids))), values, tops, request)

    def _sum(self, scored: list[int], values: list, tops: list, request: Loglikelihood) -> LoglikelihoodResult:
        """Add up the scored tokens' logprobs; greedy if each was the server's top choice."""
        total, greedy, n = 0.0, True, 0
        for i in scored:
            if values[i] is None and i == 0:  # the first prompt token: nothing predicts it
                continue
            if values[i] is None or not tops[i]:
                raise self._no_logprobs()
            total += float(values[i])
            greedy = greedy and float(values[i]) >= max(map(float, tops[i].values())) - GREEDY_TOLERANCE
            n += 1
        if n == 0:
            raise RuevalError(
                f"the server at {self.base_url} gave no logprob for any token of the continuation "
                f"{request.continuation!r} after {request.context!r}: its first token starts the prompt; "
                "pass the model's tokenizer to score by token ids"
            )
        return LoglikelihoodResult(total, n, greedy)

    def _tokens(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    # -- generation ----------------------------------------------------------------------------
    def _generate_chunk(self, requests: list[Generation]) -> list[str]:
        r = requests[0]  # the chunk shares its sampling settings
        sample = r.temperature > 0 or r.top_p < 1  # as the HF backend: nucleus sampling at temperature 1 by default
        payload = {
            "prompt": [self._generation_prompt(g.prompt) for g in requests],
            "max_tokens": r.max_new_tokens,
            "temperature": (r.temperature or 1.0) if sample else 0.0,
            "top_p": r.top_p if sample else 1.0,
            "seed": r.seed,
        }
        if r.stop:
            payload["stop"] = list(r.stop)
        choices = self._completions(payload, len(requests))
        return [cut_at_stop(str(c.get("text") or ""), r.stop) for c in choices]

    def _generation_prompt(self, prompt: str) -> str | list[int]:
        return [self.start_token, *self._tokens(prompt)] if self.tokenizer is not None else prompt

    # -- HTTP ----------------------------------------------------------------------------------
    def _completions(self, payload: dict, n_prompts: int) -> list[dict]:
        """POST /completions; the choices in prompt order."""
        body = self._request("/completions", {"model": self.model, **payload})
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or len(choices) != n_prompts:
            raise RuevalError(f"the server at {self.base_url} answered /completions without one choice per prompt")
        return sorted(choices, key=lambda c: c.get("index", 0))

    def _check_server(self) -> None:
        """Once: fail fast with a clear message when nothing listens at base_url or the model
        name is not among the served ones. Servers without /models are not checked."""
        with self._check_lock:
            if self._checked:
                return
            try:
                listing = self._request("/models", None, retry_connection=False)
            except _ClientError as e:
                if e.status != 404:
                    raise
                listing = None
            entries = listing.get("data", []) if isinstance(listing, dict) else []
            served = [str(m.get("id")) for m in entries if isinstance(m, dict)]
            if served and self.model not in served:
                raise RuevalError(
                    f"the server at {self.base_url} does not serve model '{self.model}'; it serves: {', '.join(served)}"
                )
            self._checked = True

    def _request(self, path: str, payload: dict | None, retry_connection: bool = True) -> Any:
        """One HTTP call with retries and exponential backoff; the decoded JSON answer."""
        url = self.base_url + path
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(payload, ensure_ascii=False).encode() if payload is not None else None
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                break
            except urllib.error.HTTPError as e:
                message = _server_message(e.read())
                if e.code in RETRIED_STATUS and not last:
                    self._wait(attempt, e.headers.get("Retry-After"))
                    continue
                raise self._http_error(url, e.code, message) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, HTTPException) as e:
                reason = getattr(e, "reason", None) or e
                if retry_connection and not last:
                    self._wait(attempt, None)
                    continue
                tries = f" (tried {attempt + 1} times)" if attempt else ""
                if isinstance(reason, TimeoutError) or "timed out" in str(reason):
                    raise RuevalError(f"the server at {url} did not answer within {self.timeout:g} s{tries}") from None
                raise RuevalError(
                    f"cannot reach an OpenAI-compatible server at {self.base_url}{tries}: {reason}; "
                    "is it running, and does the URL end in /v1?"
                ) from None
        try:
            return json.loads(raw)
        except ValueError:
            raise RuevalError(f"the server at {url} did not answer with JSON: {raw[:200]!r}") from None

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        # the jitter keeps many clients that failed together from retrying together
        delay = min(MAX_BACKOFF, self.retry_delay * 2**attempt) * random.uniform(0.8, 1.2)
        if retry_after and retry_after.strip().isdigit():
            delay = min(MAX_BACKOFF, float(retry_after))
        time.sleep(delay)

    def _http_error(self, url: str, status: int, message: str) -> Exception:
        if status in (401, 403):
            return RuevalError(f"the server at {url} refused the API key (HTTP {status}: {message})")
        if status in RETRIED_STATUS:
            tries = self.max_retries + 1
            return RuevalError(f"the server at {url} kept failing after {tries} tries (HTTP {status}): {message}")
        if status == 404 and "model" in message.lower():
            return _ClientError(status, f"the server at {self.base_url} has no model '{self.model}' ({message})")
        if status == 404:
            return _ClientError(status, f"the server has no {url} (HTTP 404: {message}); does the base URL end in /v1?")
        return _ClientError(status, f"the server at {url} rejected the request (HTTP {status}): {message}")

    def _no_logprobs(self) -> RuevalError:
        return RuevalError(
            f"the server at {self.base_url} returned no prompt logprobs for '{self.model}' (asked with echo=true, "
            "logprobs=1), which scoring needs; vLLM returns them on /v1/completions (keep --max-logprobs >= 1); "
            "a server without them can run generation tasks only"
        )


class _ClientError(RuevalError):
    """A 4xx answer: the request itself was refused; retrying it unchanged cannot help."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(message)


def _server_message(raw: bytes) -> str:
    """The error message of an OpenAI-style error body, else the body's start."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw[:200].decode(errors="replace").strip() or "no details"
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(body)[:200]


def _load_tokenizer(tokenizer: Any) -> Any:
    if not isinstance(tokenizer, str):
        return tokenizer
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(tokenizer)
    except (OSError, ValueError) as e:
        raise RuevalError(f"cannot load the tokenizer {tokenizer} ({str(e).splitlines()[0]})") from None
