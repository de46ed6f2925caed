"""The engine between solvers and a backend: deduplicates requests, answers repeats from the
request cache, and computes the rest in chunks sorted so that shared prefixes sit together
(the HF backend then forwards each shared prefix once per chunk). Each chunk is committed to
the cache as soon as it is done."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from rueval.models.base import Generation, LanguageModel, Loglikelihood, LoglikelihoodResult, Request
from rueval.models.cache import RequestCache, request_key
from rueval.progress import progress


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
        compute: Callable[[Sequence[Any]], list[Any]],
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
        chunks = [missing[i : i + self.chunk_size] for i in range(0, len(missing), self.chunk_size)]
        for chunk in progress(chunks, f"{description} ({len(missing)} requests)", total=len(chunks)):
            results = compute(chunk)
            done.update(zip(chunk, results, strict=True))
            encoded = {keys[r]: encode(result) for r, result in zip(chunk, results, strict=True)}
            self._memory.update(encoded)
            self.computed += len(chunk)
            if self.cache is not None:
                self.cache.put_many(encoded)
        return [done[request] for request in requests]
