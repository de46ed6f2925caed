"""The engine between solvers and a backend: deduplicates requests, answers repeats from the
request cache, and computes the rest in chunks. Every batch the backend finishes is committed to
the cache at once, so a killed run loses only the batch in flight.

Every result is checked where it enters, whichever backend gave it (rueval.models.base.result_problem):
an impossible one (a NaN, infinite or positive log-probability, a token count that is not a positive
whole number) stops the run with an error naming the model and the request, and is never cached; a
cached row that fails the same check is computed again, and the run says so.

Requests are computed in the order they are given (a run lists its first task's requests first,
so tasks finish in order); within a chunk they are sorted so that shared prefixes sit together,
and the HF backend forwards each shared prefix once per chunk. Progress is counted in tokens, all
requests' counted before the first is computed (rueval.models.token_counts), and the ETA learns how
long a scored and a generated token take as they finish.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from time import perf_counter
from typing import Any

from rueval.core.progress import counting, detail, warn
from rueval.models.base import (
    Generation,
    ImpossibleAnswer,
    LanguageModel,
    Loglikelihood,
    LoglikelihoodResult,
    Request,
    TokenLogprobs,
    TokenLogprobsResult,
    describe,
    prompt_text,
    result_problem,
)
from rueval.models.cache import RequestCache, request_key
from rueval.models.token_counts import request_tokens

# each kind of request, the backend method that computes it, and the order that puts shared prefixes together
KINDS: tuple[tuple[type, str, Callable[[Any], str]], ...] = (
    (Loglikelihood, "loglikelihood", lambda r: prompt_text(r.context) + r.continuation),
    (Generation, "generate", lambda r: prompt_text(r.prompt)),
    (TokenLogprobs, "token_logprobs", lambda r: r.text),
)
LOGLIKELIHOOD_FIELDS = set(LoglikelihoodResult.__dataclass_fields__)
TOKEN_LOGPROBS_FIELDS = set(TokenLogprobsResult.__dataclass_fields__)


class Engine:
    def __init__(self, model: LanguageModel, cache: RequestCache | None = None, chunk_size: int = 4096):
        self.model = model
        self.cache = cache
        self.chunk_size = chunk_size
        self.computed = 0  # requests the backend computed (not served from a cache)
        self._memory: dict[str, Any] = {}  # this process's results, also when there is no cache on disk

    def loglikelihood(
        self, requests: Sequence[Loglikelihood], description: str = "scoring"
    ) -> list[LoglikelihoodResult]:
        return self.compute(requests, description)

    def generate(self, requests: Sequence[Generation], description: str = "generating") -> list[str]:
        return self.compute(requests, description)

    def token_logprobs(
        self, requests: Sequence[TokenLogprobs], description: str = "scoring texts"
    ) -> list[TokenLogprobsResult]:
        return self.compute(requests, description)

    def compute(self, requests: Sequence[Request], description: str = "computing") -> list[Any]:
        """Every request's result, in the requests' order."""
        done: dict[Request, Any] = {}
        for results, _ in self.stream(requests, description):
            done = results
        return [done[request] for request in requests]

    def stream(
        self, requests: Sequence[Request], description: str = "computing"
    ) -> Iterator[tuple[dict[Request, Any], set[Request]]]:
        """Computes the requests (log-likelihoods and generations alike), yielding after the cache
        look-up and after each chunk: every result available so far, and the requests computed so
        far (not served from a cache)."""
        identity, mode = self.model.identity, self.model.generation_mode
        keys = {request: request_key(identity, request, mode) for request in dict.fromkeys(requests)}
        done = {
            request: self._decode(request, self._memory[key]) for request, key in keys.items() if key in self._memory
        }
        if self.cache is not None:
            done.update(self._cached(self.cache, keys, done))
        missing = [request for request in keys if request not in done]
        detail(f"{description}: {len(done):,} of {len(keys):,} distinct requests cached, {len(missing):,} to compute")
        computed: set[Request] = set()
        yield done, computed
        chunks = [
            self._sorted_parts(missing[start : start + self.chunk_size])
            for start in range(0, len(missing), self.chunk_size)
        ]
        started = perf_counter()
        tokens = request_tokens(
            [(part, sort_key) for parts in chunks for _, part, sort_key in parts], self.model.capabilities.tokenizer
        )
        budgets = sum(t.new for t in tokens.values())
        prompts = sum(t.prompt for t in tokens.values())
        detail(
            f"{description}: {prompts:,} prompt tokens and {budgets:,} of generation budgets to compute "
            f"(counted in {perf_counter() - started:.1f} s)"
        )
        costs = {method: 0.0 for _, method, _ in KINDS}  # each kind's tokens weighed by their time (token_counts)
        for parts in chunks:
            for method, part, _ in parts:
                costs[method] += sum(tokens[r].cost for r in part)
        with counting(description, prompts + budgets, "tokens", costs) as counter:
            for parts in chunks:
                for method, part, _ in parts:

                    def record(finished: list[tuple[int, Any]], part: list[Request] = part, kind: str = method) -> None:
                        """Commit a finished batch: into the results, this process's memory and the cache."""
                        encoded, recorded = {}, []
                        for i, result in finished:
                            if not isinstance(i, int) or not 0 <= i < len(part):
                                raise ImpossibleAnswer(
                                    f"{self._shown} reported a result for request {i!r:.20} of {len(part)}"
                                )
                            if part[i] in done:
                                continue
                            self._check(part[i], result)
                            done[part[i]] = result
                            computed.add(part[i])
                            recorded.append(tokens[part[i]])
                            encoded[keys[part[i]]] = (
                                asdict(result)
                                if isinstance(result, LoglikelihoodResult | TokenLogprobsResult)
                                else result
                            )
                        if not encoded:
                            return
                        self._memory.update(encoded)
                        self.computed += len(encoded)
                        if self.cache is not None:
                            self.cache.put_many(encoded)
                        counter.advance(sum(t.shown for t in recorded), kind, sum(t.cost for t in recorded))

                    results = getattr(self.model, method)(part, record)
                    if not isinstance(results, Sequence) or len(results) != len(part):
                        given = f"{len(results)} results" if isinstance(results, Sequence) else f"{results!r:.40}"
                        raise ImpossibleAnswer(f"{self._shown} answered {given} for {len(part)} requests; not cached")
                    record(list(enumerate(results)))  # whatever the backend did not report as it went
                yield done, computed
        if missing:  # each kind's speed on this machine, for sizing runs (and GENERATED_TOKEN_COST)
            scored = sum(t.prompt for r, t in tokens.items() if not isinstance(r, Generation))
            spent = counter.spent("loglikelihood") + counter.spent("token_logprobs")
            detail(
                f"{description}: {scored:,} scored tokens in {spent:.1f} s; generations' "
                f"{prompts - scored:,} prompt and {budgets:,} budget tokens in {counter.spent('generate'):.1f} s"
            )

    @staticmethod
    def _sorted_parts(chunk: Sequence[Request]) -> list[tuple[str, list[Request], Callable[[Any], str]]]:
        """A chunk's requests of each kind, sorted so that shared prefixes sit together: (backend method,
        requests, the text they are sorted by)."""
        parts = [
            (method, sorted((r for r in chunk if isinstance(r, kind)), key=key), key) for kind, method, key in KINDS
        ]
        return [(method, part, key) for method, part, key in parts if part]

    def _cached(self, cache: RequestCache, keys: dict[Request, str], done: dict[Request, Any]) -> dict[Request, Any]:
        """The cached results of the requests not done yet; rows that fail the check are left out (so
        computed again), and the run says how many and why."""
        stored = cache.get_many(key for request, key in keys.items() if request not in done)
        found, problems = {}, []
        for request, key in keys.items():
            if key in stored:
                result = self._decode(request, stored[key])
                problem = result_problem(request, result)
                if problem is None:
                    found[request] = result
                else:
                    problems.append(f"{problem} for {describe(request)}")
        if problems:
            where = f"the request cache {cache.path}"
            warn(f"{where} holds {len(problems)} results that fail their check ({problems[0]}); computing them again")
        return found

    def _check(self, request: Request, result: Any) -> None:
        problem = result_problem(request, result)
        if problem:
            raise ImpossibleAnswer(f"{self._shown} answered {problem} for {describe(request)}; not cached")

    @property
    def _shown(self) -> str:
        """The model as messages name it: its identity before the first `` key=value`` (a server's card)."""
        return re.split(r" \w+=", self.model.identity, maxsplit=1)[0]

    @staticmethod
    def _decode(request: Request, value: Any) -> Any:
        """A cached result as the backend returns it (log-likelihood and token results are stored as objects,
        their lists as tuples); the stored value itself where it is no such object (result_problem then names it)."""
        if isinstance(request, Loglikelihood) and isinstance(value, dict) and set(value) == LOGLIKELIHOOD_FIELDS:
            return LoglikelihoodResult(**value)
        if isinstance(request, TokenLogprobs) and isinstance(value, dict) and set(value) == TOKEN_LOGPROBS_FIELDS:
            columns = {name: tuple(column) if isinstance(column, list) else column for name, column in value.items()}
            return TokenLogprobsResult(**columns)
        return value
