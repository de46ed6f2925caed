"""The engine between solvers and a backend: deduplicates requests, answers repeats from the
request cache, and computes the rest in chunks. Every batch the backend finishes is committed to
the cache at once, so a killed run loses only the batch in flight.

Requests are computed in the order they are given (a run lists its first task's requests first,
so tasks finish in order); within a chunk they are sorted so that shared prefixes sit together,
and the HF backend forwards each shared prefix once per chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from typing import Any

from rueval.models.base import Generation, LanguageModel, Loglikelihood, LoglikelihoodResult, Request, prompt_text
from rueval.models.cache import RequestCache, request_key
from rueval.progress import counting, detail

# each kind of request, the backend method that computes it, and the order that puts shared prefixes together
KINDS: tuple[tuple[type, str, Callable[[Any], str]], ...] = (
    (Loglikelihood, "loglikelihood", lambda r: prompt_text(r.context) + r.continuation),
    (Generation, "generate", lambda r: prompt_text(r.prompt)),
)


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
        keys = {request: request_key(self.model.identity, request) for request in dict.fromkeys(requests)}
        done = {
            request: self._decode(request, self._memory[key]) for request, key in keys.items() if key in self._memory
        }
        if self.cache is not None:
            stored = self.cache.get_many(key for request, key in keys.items() if request not in done)
            done.update({request: self._decode(request, stored[key]) for request, key in keys.items() if key in stored})
        missing = [request for request in keys if request not in done]
        detail(f"{description}: {len(done):,} of {len(keys):,} distinct requests cached, {len(missing):,} to compute")
        computed: set[Request] = set()
        yield done, computed
        with counting(description, len(missing), "requests") as counter:
            for start in range(0, len(missing), self.chunk_size):
                chunk = missing[start : start + self.chunk_size]
                for kind, method, sort_key in KINDS:
                    part = sorted((r for r in chunk if isinstance(r, kind)), key=sort_key)
                    if not part:
                        continue

                    def record(finished: list[tuple[int, Any]], part: list[Request] = part) -> None:
                        """Commit a finished batch: into the results, this process's memory and the cache."""
                        encoded = {}
                        for i, result in finished:
                            if part[i] in done:
                                continue
                            done[part[i]] = result
                            computed.add(part[i])
                            encoded[keys[part[i]]] = (
                                asdict(result) if isinstance(result, LoglikelihoodResult) else result
                            )
                        if not encoded:
                            return
                        self._memory.update(encoded)
                        self.computed += len(encoded)
                        if self.cache is not None:
                            self.cache.put_many(encoded)
                        counter.advance(len(encoded))

                    results = getattr(self.model, method)(part, record)
                    record(list(enumerate(results)))  # whatever the backend did not report as it went
                yield done, computed

    @staticmethod
    def _decode(request: Request, value: Any) -> Any:
        """A cached result as the backend returns it (log-likelihood results are stored as objects)."""
        return LoglikelihoodResult(**value) if isinstance(request, Loglikelihood) else value
