"""OpenAI-compatible completion servers (`-m openai:MODEL --base-url URL`): vLLM, llama.cpp
server, TGI. This is how large models on GPU servers and clusters are evaluated.

Log-likelihoods, and the token log-probabilities of a whole text the contamination audit reads, come from the
prompt's own token logprobs (``echo=true, logprobs=1``, read by rueval.models.backends.openai_echo), so the server must
return logprobs for prompt tokens; generation uses the server's sampling.

Several servers (``base_url`` a list, or comma-separated) share the work: see rueval.models.backends.serving. The
cache identity is the model name and what the servers say about the weights (their `/v1/models` entry and
``system_fingerprint``), not their URLs, so a run on two servers reuses a one-server run's results, and new weights
behind the same name and port do not.

Prompts go as token ids whenever the served model's tokenizer can be had (``tokenizer=``: by default the server's own,
from its weights folder or its ``/tokenize``; or a local path or hub id, a tokenizer object;
rueval.models.backends.token_ids), encoded exactly as the HF backend encodes them: a start token, the context's
tokens, then the continuation's. Token boundaries are then exact and an empty context scores every token, so results
equal ``-m hf:`` on the same weights. Text prompts (``tokenizer="text"``, or no tokenizer to be had: a warning says
so) are scored by the character rule of rueval.models.backends.char_boundary.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rueval.core.errors import RuevalError
from rueval.models.backends.openai_echo import Scored, scored_ids, scored_text
from rueval.models.backends.serving import (
    ClientError,
    Dispatcher,
    ServerClient,
    ServerDown,
    parse_base_urls,
    route,
    weights_card,
)
from rueval.models.backends.token_ids import (
    AUTO,
    MODES,
    SERVER,
    TEXT,
    NoServedTokenizer,
    load_tokenizer,
    local_tokens,
    say_how_prompts_go,
    served_tokens,
    spec_tokenizer,
)
from rueval.models.base import (
    Capabilities,
    Generation,
    LanguageModel,
    Loglikelihood,
    LoglikelihoodResult,
    OnDone,
    TokenLogprobs,
    TokenLogprobsResult,
    cut_at_stop,
    prompt_text,
    text_of,
)
from rueval.models.factory import ModelOptions, ModelSpec


class OpenAICompletionsModel(LanguageModel):
    """A model behind an OpenAI-compatible ``/v1/completions`` endpoint.

    ``concurrency`` HTTP requests run at once on each server, each carrying up to ``prompts_per_request``
    prompts (the API takes a list). A request that fails with 408/429/5xx or a dropped connection is
    retried up to ``max_retries`` times, waiting ``retry_delay`` seconds and doubling (capped at 30 s,
    or as the server's Retry-After says), within ``timeout`` seconds in all. The servers are first
    contacted when the identity or the first result is asked for.
    """

    backend = "openai"  # the -m prefix, which opens the cache identity
    token_prompts = True  # prompts as token ids when the tokenizer can be had (the chat endpoint takes messages)
    probe: tuple[str, dict] = ("/completions", {"prompt": "0"})  # a one-token request: its system_fingerprint

    def __init__(
        self,
        model: str,
        base_url: str | Sequence[str],
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = ModelOptions.timeout,
        max_retries: int = 5,
        tokenizer: Any = AUTO,
        prompts_per_request: int = 16,
        retry_delay: float = 1.0,
    ):
        self.model = model
        self.urls = parse_base_urls(base_url) if isinstance(base_url, str) else [u.rstrip("/") for u in base_url]
        self.concurrency = max(1, concurrency)
        self.prompts_per_request = max(1, prompts_per_request)
        api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        connections = self.concurrency * len(self.urls)
        self._client = ServerClient(model, api_key, timeout, max_retries, retry_delay, connections)
        self._tokenizer = AUTO if tokenizer is None else tokenizer
        # token-id prompts; the server's own tokenizer is found when the servers are first contacted
        given = not (isinstance(self._tokenizer, str) and self._tokenizer in MODES)
        self.tokenizer = load_tokenizer(tokenizer) if given else None
        self.prompt_tokens = local_tokens(self.tokenizer, f"openai:{model}") if given else None
        self._capabilities = Capabilities(
            loglikelihood=True, generation=True, token_logprobs=True, tokenizer=self.tokenizer
        )
        self._scoring_max_tokens = 0  # echo without generation; 1 for servers that refuse 0
        self._dispatcher = Dispatcher(self.urls, self.concurrency)
        self._card: dict[str, Any] | None = None  # the served weights, as every server describes them
        self._fingerprints: dict[str, Any] = {}  # each server's system_fingerprint, once the identity is known
        self._identity: str | None = None
        self._checked = False
        self._check_lock = threading.RLock()

    @property
    def identity(self) -> str:  # type: ignore[override]  # read only, as every reader does; known once asked
        """``openai:MODEL`` (``backend:MODEL``) and what the servers say about the weights: their
        `/v1/models` entry (root, parent, created) and the answers' ``system_fingerprint``; the URLs
        only for servers that list no models."""
        with self._check_lock:
            if self._identity is None:
                self._check_servers()
                parts = [f"{self.backend}:{self.model}"]
                if self._card is None:
                    parts[0] += "@" + ",".join(sorted(self.urls))
                parts += (
                    [f"{key}={value}" for key, value in sorted(self._card.items()) if key != "id"] if self._card else []
                )
                fingerprints = {self._probe_fingerprint(url) for url in self._live_urls()}
                if len(fingerprints) > 1:
                    raise RuevalError(
                        f"the servers of '{self.model}' give different system_fingerprints: "
                        f"{sorted(map(str, fingerprints))}"
                    )
                if fingerprints != {None}:
                    parts.append(f"system_fingerprint={fingerprints.pop()}")
                if self.prompt_tokens is not None:
                    # token-id prompts score an empty context differently from text prompts: keep their caches apart
                    parts.append(f"tokenizer={self.prompt_tokens.name}")
                self._identity = " ".join(parts)
            return self._identity

    @property
    def capabilities(self) -> Capabilities:
        """Log-likelihoods and texts' token log-probabilities (the server must return prompt logprobs: checked when
        it scores), and generation."""
        return self._capabilities

    # -- requests ------------------------------------------------------------------------------
    def loglikelihood(
        self, requests: Sequence[Loglikelihood], on_done: OnDone | None = None
    ) -> list[LoglikelihoodResult]:
        """log P(continuation | context) for each request, from the server's prompt logprobs."""
        for r in requests:
            if not r.continuation:
                raise ValueError("a log-likelihood request needs a non-empty continuation")
        chunks = self._chunks(list(range(len(requests))))
        return self._spread(
            requests, chunks, lambda r: prompt_text(r.context) + r.continuation, self._score_chunk, on_done
        )

    def token_logprobs(
        self, requests: Sequence[TokenLogprobs], on_done: OnDone | None = None
    ) -> list[TokenLogprobsResult]:
        """Each text's tokens' prompt logprobs after the start token, read as a log-likelihood of the text after an
        empty context is. A token-id prompt holds the text's first tokens where it is longer than the server's
        window (less the token vLLM generates: one token fewer than hf: scores of such a text). The server's top
        logprobs are not the whole next-token distribution: no Min-K%++ statistics (token_distribution is not
        declared)."""
        texts = [Loglikelihood("", r.text) for r in requests]
        chunks = self._chunks(list(range(len(texts))))
        return self._spread(texts, chunks, lambda r: r.continuation, self._texts_chunk, on_done)

    def generate(self, requests: Sequence[Generation], on_done: OnDone | None = None) -> list[str]:
        """Generated texts, cut at the first stop sequence. Prompts with the same sampling
        settings share HTTP requests; the seed goes to the server, which applies it per prompt."""
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.max_new_tokens, r.stop, r.top_p, r.temperature, r.seed), []).append(i)
        chunks = [chunk for indices in groups.values() for chunk in self._chunks(indices)]
        return self._spread(requests, chunks, lambda r: prompt_text(r.prompt), self._generate_chunk, on_done)

    def _chunks(self, indices: list[int]) -> list[list[int]]:
        """Request indices in groups of ``prompts_per_request``: one HTTP request each."""
        return [indices[i : i + self.prompts_per_request] for i in range(0, len(indices), self.prompts_per_request)]

    def _spread(
        self,
        requests: Sequence[Any],
        chunks: list[list[int]],
        prompt_of: Callable[[Any], str],
        compute: Callable[[str, list], list],
        on_done: OnDone | None,
    ) -> list:
        """Compute chunks of requests over the servers (each sent to the home of its first prompt), each reported
        to ``on_done`` as it comes back; results in the requests' order."""
        if not chunks:
            return []
        self._check_servers()
        results: list = [None] * len(requests)

        def finished(c: int, values: list) -> None:
            pairs = list(zip(chunks[c], values, strict=True))
            for i, result in pairs:
                results[i] = result
            if on_done is not None:
                on_done(pairs)

        homes = [route(prompt_of(requests[c[0]]), len(self.urls)) for c in chunks]
        self._dispatcher.run(chunks, homes, lambda url, c: compute(url, [requests[i] for i in c]), finished)
        return results

    # -- log-likelihood ------------------------------------------------------------------------
    def _score_chunk(self, url: str, requests: list[Loglikelihood]) -> list[LoglikelihoodResult]:
        tokens = self.prompt_tokens.scoring() if self.prompt_tokens is not None else None
        encoded = [tokens.pair(r) for r in requests] if tokens is not None else None
        return [
            LoglikelihoodResult(sum(values), len(values), greedy)
            for values, greedy in self._echo(url, requests, encoded)
        ]

    def _texts_chunk(self, url: str, texts: list[Loglikelihood]) -> list[TokenLogprobsResult]:
        tokens = self.prompt_tokens.scoring() if self.prompt_tokens is not None else None
        encoded = [(tokens.text(t.continuation), 1) for t in texts] if tokens is not None else None
        return [TokenLogprobsResult(tuple(values)) for values, _ in self._echo(url, texts, encoded)]

    def _echo(
        self, url: str, requests: list[Loglikelihood], encoded: list[tuple[list[int], int]] | None
    ) -> list[Scored]:
        """The requests' prompts echoed with their logprobs (token ids ``encoded``: the sequence and its first scored
        token; else text), each continuation's tokens read (openai_echo)."""
        prompts = (
            [ids for ids, _ in encoded]
            if encoded is not None
            else [text_of(r.context) + r.continuation for r in requests]
        )
        while True:
            max_tokens = self._scoring_max_tokens
            payload = {"prompt": prompts, "max_tokens": max_tokens, "echo": True, "logprobs": 1, "temperature": 0}
            try:
                choices = self._completions(url, payload, len(prompts))
                break
            except ClientError:
                if max_tokens == 0:  # some servers need max_tokens >= 1 even with echo
                    self._scoring_max_tokens = 1
                    continue
                raise
        if encoded is not None:
            return [
                scored_ids(c, url, self.model, r, *pair) for c, r, pair in zip(choices, requests, encoded, strict=True)
            ]
        return [scored_text(c, url, self.model, r, max_tokens) for c, r in zip(choices, requests, strict=True)]

    # -- generation ----------------------------------------------------------------------------
    def _generate_chunk(self, url: str, requests: list[Generation]) -> list[str]:
        r = requests[0]  # the chunk shares its sampling settings
        payload = {"prompt": [self._generation_prompt(g) for g in requests], **sampling_fields(r)}
        choices = self._completions(url, payload, len(requests))
        return [cut_at_stop(str(c.get("text") or ""), r.stop) for c in choices]

    def _generation_prompt(self, request: Generation) -> str | list[int]:
        return self.prompt_tokens.prompt(request) if self.prompt_tokens is not None else text_of(request.prompt)

    # -- HTTP ----------------------------------------------------------------------------------
    def _completions(self, url: str, payload: dict, n_prompts: int) -> list[dict]:
        """POST /completions; the choices in prompt order. A server whose system_fingerprint
        changed since the identity was taken is serving other weights: its answer is refused."""
        body = self._post(url, "/completions", payload)
        choices = body.get("choices")
        if not isinstance(choices, list) or len(choices) != n_prompts or not all(isinstance(c, dict) for c in choices):
            raise RuevalError(f"the server at {url} answered /completions without one choice per prompt")
        return sorted(choices, key=lambda c: c["index"] if isinstance(c.get("index"), int) else 0)

    def _post(self, url: str, path: str, payload: dict) -> dict:
        """POST the model's request; the answer, refused when its system_fingerprint changed since
        the identity was taken (the server is serving other weights)."""
        body = self._client.request(url, path, {"model": self.model, **payload})
        if not isinstance(body, dict):
            raise RuevalError(f"the server at {url} answered {path} with {type(body).__name__}, not an object")
        if url in self._fingerprints and body.get("system_fingerprint") != self._fingerprints[url]:
            raise RuevalError(
                f"the server at {url} changed its system_fingerprint from {self._fingerprints[url]} to "
                f"{body.get('system_fingerprint')} during the run: its weights or serving changed; run again"
            )
        return body

    def _probe_fingerprint(self, url: str) -> Any:
        """The system_fingerprint of a one-token answer (None where the server gives none)."""
        if url not in self._fingerprints:
            path, payload = self.probe
            body = self._client.request(url, path, {"model": self.model, **payload, "max_tokens": 1, "temperature": 0})
            self._fingerprints[url] = body.get("system_fingerprint") if isinstance(body, dict) else None
        return self._fingerprints[url]

    def _live_urls(self) -> list[str]:
        return [url for url, up in zip(self.urls, self._dispatcher.alive, strict=True) if up]

    def _check_servers(self) -> None:
        """Once: every server must serve the named model, and all must describe its weights alike
        (a mismatch stops the run before any scoring). Among several servers, one that cannot be
        reached is reported and left out. Servers without /models are not checked."""
        with self._check_lock:
            if self._checked:
                return
            cards: dict[str, dict] = {}
            entry: dict = {}  # the model's /v1/models entry on the first server that lists it
            for index, url in enumerate(self.urls):
                try:
                    listing, answered_at = self._client.dated_request(url, "/models", None, retry_connection=False)
                except ClientError as e:
                    if e.status != 404:
                        raise
                    continue
                except ServerDown as e:
                    self._dispatcher.drop(index, e)
                    continue
                entries = listing.get("data", []) if isinstance(listing, dict) else []
                served = {str(m.get("id")): m for m in entries if isinstance(m, dict)}
                if served and self.model not in served:
                    raise RuevalError(
                        f"the server at {url} does not serve model '{self.model}'; it serves: {', '.join(served)}"
                    )
                if served:
                    cards[url] = weights_card(served[self.model], answered_at)
                    entry = entry or served[self.model]
            first_url, first_card = next(iter(cards.items()), ("", {}))
            for url, card in cards.items():
                if card != first_card:
                    raise RuevalError(
                        f"the servers serve different weights as '{self.model}': {first_url} has {first_card}, "
                        f"{url} has {card}"
                    )
            self._card = next(iter(cards.values()), None)
            self._find_prompt_tokens(entry)
            self._checked = True

    def _find_prompt_tokens(self, entry: dict) -> None:
        """The server's own tokenizer when asked for (token_ids.served_tokens); a tokenizer given gets
        the served model's window. Says once which way prompts go."""
        if not self.token_prompts:
            return
        window = entry.get("max_model_len")
        reason = "tokenizer=text"
        if self.prompt_tokens is not None and isinstance(window, int):
            self.prompt_tokens = replace(self.prompt_tokens, window=window)
        elif self.prompt_tokens is None and self._tokenizer in (AUTO, SERVER):
            root = self._live_urls()[0].removesuffix("/v1")  # vLLM's /tokenize is beside /v1, not under it

            def request(path: str, payload: dict | None) -> Any:
                body = None if payload is None else {"model": self.model, **payload}
                return self._client.request(root, path, body, retry_connection=False)

            try:
                self.prompt_tokens = served_tokens(request, entry, f"openai:{self.model}")
            except NoServedTokenizer as e:
                if self._tokenizer == SERVER:
                    raise
                reason = e.reason
        say_how_prompts_go(f"openai:{self.model}", self.prompt_tokens, reason, quietly=self._tokenizer == TEXT)


def open_model(spec: ModelSpec, options: ModelOptions) -> OpenAICompletionsModel:
    """The backend of `-m openai:MODEL[,tokenizer=...] --base-url URL [--tokenizer ...]` (BACKENDS)."""
    return OpenAICompletionsModel(
        spec.target,
        served_at(spec, options),
        concurrency=options.concurrency,
        timeout=options.timeout,
        tokenizer=spec_tokenizer(spec, options),
    )


def served_at(spec: ModelSpec, options: ModelOptions) -> str:
    """The --base-url a served model needs."""
    if not options.base_url:
        raise RuevalError(f"-m {spec} needs --base-url, e.g. http://localhost:8000/v1")
    return options.base_url


def sampling_fields(r: Generation) -> dict[str, Any]:
    """The request fields that say how to generate: as the HF backend, nucleus sampling at temperature 1
    unless the request is greedy (temperature 0 and top_p 1)."""
    sample = r.temperature > 0 or r.top_p < 1
    fields: dict[str, Any] = {
        "max_tokens": r.max_new_tokens,
        "temperature": (r.temperature or 1.0) if sample else 0.0,
        "top_p": r.top_p if sample else 1.0,
        "seed": r.seed,
    }
    if r.stop:
        fields["stop"] = list(r.stop)
    return fields
