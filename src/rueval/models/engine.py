"""The engine between solvers and a backend: deduplicates requests, answers repeats from the
request cache, and computes the rest in chunks sorted so that shared prefixes sit together
(the HF backend then forwards each shared prefix once per chunk). Every batch the backend
finishes is committed to the cache at once, so a killed run loses only the batch in flight."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from rueval.models.base import Generation, LanguageModel, Loglikelihood, LoglikelihoodResult, OnDone, Request
from rueval.models.cache import RequestCache, request_key
from rueval.progress import counting


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
        results = self._run(
            requests,
            self.model.loglikelihood,
            sort_key=lambda r: r.context + r.continuation,
            encode=asdict,
            description=description,
        )
        return [r if isinstance(r, LoglikelihoodResult) else LoglikelihoodResult(**r) for r in results]

    def generate(self, requests: Sequence[Generation], description: str = "generating") -> list[str]:
        return self._run(
            requests,
            self.model.generate,
            sort_key=lambda r: r.prompt,
            encode=lambda text: text,
            description=description,
        )

    def _run(
        self,
        requests: Sequence[Request],
        compute: Callable[[Sequence[Any], OnDone], list[Any]],
        sort_key: Callable[[Any], str],
        encode: Callable[[Any], Any],
        description: str,
    ) -> list[Any]:
        keys = {request: request_key(self.model.identity, request) for request in dict.fromkeys(requests)}
        done = {request: self._memory[key] for request, key in keys.items() if key in self._memory}
        if self.cache is not None:
            stored = self.cache.get_many(key for request, key in keys.items() if request not in done)
            done.update({request: stored[key] for request, key in keys.items() if key in stored})
        missing = sorted((r for r in keys if r not in done), key=sort_key)
        with counting(description, len(missing), "requests") as counter:
            for start in range(0, len(missing), self.chunk_size):
                chunk = missing[start : start + self.chunk_size]

                def record(finished: list[tuple[int, Any]], chunk: list[Request] = chunk) -> None:
                    if not finished:
                        return
                    encoded = {}
                    for i, result in finished:
                        done[chunk[i]] = result
                        encoded[keys[chunk[i]]] = encode(result)
                    self._memory.update(encoded)
                    self.computed += len(encoded)
                    if self.cache is not None:
                        self.cache.put_many(encoded)
                    counter.advance(len(encoded))

                results = compute(chunk, record)
                record([(i, result) for i, result in enumerate(results) if chunk[i] not in done])
        return [done[request] for request in requests]
