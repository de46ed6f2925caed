"""Several OpenAI-compatible servers behind one `openai:` model: the list of servers, what a
server says about the weights it serves, and the dispatcher that spreads HTTP requests over them.

Each HTTP request (a chunk of prompts) has a home server, chosen by a hash of its first prompt's
first ``ROUTE_CHARS`` characters, so prompts that share a prefix (an episode's demonstrations,
an item's options) reach the same server, in the order given (the engine sorts them so shared
prefixes sit together), and hit its prefix cache. A server whose own queue is empty takes work
from the end of the other queue with the most chunks its server has no free connection for, so a
slow server's requests move to the faster ones and none leaves a home that can take it; a
server that fails (unreachable, timing out, or failing with 5xx after its retries) is reported
by URL and its requests go to the others.
"""

from __future__ import annotations

import email.utils
import json
import logging
import queue
import random
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.progress import LOG_EVERY, info
from rueval.data.reading import ReadLimits, read_whole

if TYPE_CHECKING:
    import httpx

ROUTE_CHARS = 256  # characters of a prompt that choose its server: an episode's demonstrations are longer
OWN_TIME = 5  # seconds: a `created` this close to the answer's time is the answer's own clock (vLLM), not the model's
RETRIED_STATUS = {408, 429, 500, 502, 503, 504}  # busy or restarting servers: worth another try
MAX_BACKOFF = 30.0  # seconds
URL_FILE_LIMITS = ReadLimits(file_bytes=2**20)  # --base-url @FILE: a list of URLs
log = logging.getLogger(__name__)


class ServerDown(RuevalError):
    """A server that cannot carry requests now (unreachable, timing out, failing with 5xx)."""


def parse_base_urls(text: str) -> list[str]:
    """``URL[,URL...]`` or ``@FILE`` (one URL a line; blank lines and ``#`` comments skipped)."""
    if text.startswith("@"):
        try:  # read as data files are: a regular file (a pipe would block), within a size
            lines = read_whole(Path(text[1:]), URL_FILE_LIMITS).decode("utf-8").splitlines()
        except (DataError, UnicodeDecodeError) as e:
            raise RuevalError(f"--base-url {text}: cannot read the file of server URLs ({e})") from None
        urls = [line.split("#", 1)[0].strip() for line in lines]
    else:
        urls = [part.strip() for part in text.split(",")]
    urls = list(dict.fromkeys(url.rstrip("/") for url in urls if url))
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise RuevalError(f"--base-url {text}: '{url}' is not an http:// or https:// URL")
    if not urls:
        raise RuevalError(f"--base-url {text}: no server URL given")
    return urls


def weights_card(entry: dict, answered_at: float) -> dict[str, Any]:
    """What a `/v1/models` entry says about the weights: id, root, parent and created. vLLM and
    llama.cpp fill ``created`` with the time of the answer, which would change the identity on
    every run: a ``created`` within a few seconds of the answer's Date (the server's own clock)
    is left out."""
    card = {key: entry.get(key) for key in ("id", "root", "parent", "created") if entry.get(key) is not None}
    if isinstance(created := card.get("created"), (int, float)) and abs(created - answered_at) <= OWN_TIME:
        del card["created"]
    return card


def route(prompt: str | list[int], n_servers: int) -> int:
    """The home server of a prompt: the same for prompts that share their first ROUTE_CHARS characters."""
    head = prompt[:ROUTE_CHARS] if isinstance(prompt, str) else " ".join(map(str, prompt[: ROUTE_CHARS // 4]))
    return zlib.crc32(head.encode()) % n_servers


def _server_time(date: str | None) -> float:
    """An HTTP Date header as a Unix time; this machine's clock without one."""
    try:
        return email.utils.parsedate_to_datetime(date).timestamp() if date else time.time()
    except (TypeError, ValueError):
        return time.time()


class Dispatcher:
    """Runs chunks on servers, ``concurrency`` HTTP requests in flight per server."""

    def __init__(self, urls: Sequence[str], concurrency: int):
        self.urls = list(urls)
        self.concurrency = concurrency
        self.alive = [True] * len(self.urls)

    def drop(self, index: int, error: Exception) -> None:
        """Take a server out of the run, reporting it by URL; losing the last one ends the run."""
        if not self.alive[index]:
            return
        if sum(self.alive) > 1:
            self.alive[index] = False
            log.warning("the server at %s is left out (%s); the others take its requests", self.urls[index], error)
            return
        raise error

    def run(
        self,
        chunks: Sequence[Any],
        homes: Sequence[int],
        compute: Callable[[str, Any], list],
        on_result: Callable[[int, list], None],
    ) -> None:
        """``compute(url, chunk)`` for every chunk, each starting on its home server;
        ``on_result(chunk index, results)`` is called in this thread as results come back."""
        live = [i for i, up in enumerate(self.alive) if up]
        queues: dict[int, deque[int]] = {i: deque() for i in live}
        for c, home in enumerate(homes):
            queues[live[home % len(live)]].append(c)
        state = _State(queues, homes, self.concurrency)
        results: queue.Queue = queue.Queue()

        def work(server: int) -> None:
            while (c := state.take(server)) is not None:
                try:
                    value = compute(self.urls[server], chunks[c])
                except ServerDown as e:
                    with state.lock:
                        try:
                            self.drop(server, e)
                        except ServerDown:
                            results.put((None, e))
                            return state.finish(server, stop=True)
                        state.give_back(server, c, [i for i, up in enumerate(self.alive) if up])
                    return
                except Exception as e:  # noqa: BLE001 - handed to the caller's thread, which raises it
                    results.put((None, e))
                    return state.finish(server, stop=True)
                results.put((c, value))
                state.finish(server)

        threads = [
            threading.Thread(target=work, args=(server,), daemon=True, name=f"openai-{server}")
            for server in live
            for _ in range(self.concurrency)
        ]
        for thread in threads:
            thread.start()
        try:
            for _ in range(len(chunks)):
                c, value = results.get()
                if c is None:
                    raise value
                on_result(c, value)
        finally:
            state.stop()
            for thread in threads:
                thread.join()


class _State:
    """The dispatcher's queues of chunk indices, one per server, and each server's chunks in flight."""

    def __init__(self, queues: dict[int, deque[int]], homes: Sequence[int], concurrency: int):
        self.queues = queues
        self.homes = homes
        self.concurrency = concurrency
        self.in_flight = dict.fromkeys(queues, 0)
        self.stopped = False
        self.lock = threading.Condition()

    def waiting(self, server: int) -> int:
        """Chunks in a server's queue beyond its free connections: those another server may take."""
        return len(self.queues[server]) - (self.concurrency - self.in_flight[server])

    def take(self, server: int) -> int | None:
        """The next chunk for a server: its own queue's first, else the end of the queue with the
        most chunks waiting for a connection; waits while chunks may still come its way; None
        when all is done."""
        with self.lock:
            while not self.stopped and server in self.queues:
                others = [s for s in self.queues if s != server]
                busiest = max(others, key=self.waiting, default=None)
                if self.queues[server]:
                    self.in_flight[server] += 1
                    return self.queues[server].popleft()
                if busiest is not None and self.waiting(busiest) > 0:
                    self.in_flight[server] += 1
                    return self.queues[busiest].pop()
                if not any(self.queues.values()) and not any(self.in_flight.values()):
                    return None
                self.lock.wait(timeout=1)
            return None

    def finish(self, server: int, stop: bool = False) -> None:
        with self.lock:
            self.in_flight[server] -= 1
            self.stopped = self.stopped or stop
            self.lock.notify_all()

    def give_back(self, server: int, chunk: int, live: list[int]) -> None:
        """A failed server's chunk in flight and its queue go to the live servers (lock held)."""
        for c in reversed([chunk, *self.queues.pop(server, ())]):
            self.queues[live[self.homes[c] % len(live)]].appendleft(c)
        self.in_flight[server] -= 1
        self.lock.notify_all()

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.lock.notify_all()


class Waiting:
    """Requests waiting for their servers' answers. While some wait and no answer has come for
    LOG_EVERY seconds, a line every LOG_EVERY seconds names each silent server and how long its oldest
    request has waited (a server that never answers is not silence until the timeout)."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self._started: dict[int, tuple[str, float]] = {}  # request number -> (server, when it was sent)
        self._count = 0
        self._answered = time.monotonic()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @contextmanager
    def on(self, server: str) -> Iterator[None]:
        with self._lock:
            self._count += 1
            number = self._count
            self._started[number] = (server, time.monotonic())
            if self._timer is None:
                self._arm()
        try:
            yield
        finally:
            with self._lock:
                del self._started[number]
                self._answered = time.monotonic()

    def _arm(self, delay: float | None = None) -> None:
        self._timer = threading.Timer(LOG_EVERY if delay is None else delay, self._report)
        self._timer.daemon = True
        self._timer.start()

    def _report(self) -> None:
        with self._lock:
            if not self._started:
                self._timer = None
                return
            now = time.monotonic()
            oldest: dict[str, tuple[float, int]] = {}
            for server, sent in self._started.values():
                first, n = oldest.get(server, (now, 0))
                oldest[server] = (min(first, sent), n + 1)
            # the first line is due LOG_EVERY after silence began (the last answer, or the oldest request
            # if sent after it), not at the next tick of a clock started by an earlier request
            due = max(self._answered, min(sent for sent, _ in oldest.values())) + LOG_EVERY
            if now < due:
                self._arm(due - now)
                return
            self._arm()
        for server, (sent, n) in oldest.items():
            if now - sent >= LOG_EVERY:
                info(
                    f"waiting for the server at {server}: {n} requests unanswered, the oldest for "
                    f"{now - sent:.0f} s (given up after {self.timeout:g} s: --timeout)"
                )


class ServerClient:
    """JSON over HTTP to OpenAI-compatible servers with httpx: one pooled ``httpx.Client`` (kept-alive
    connections shared by the dispatcher's threads) and retries with exponential backoff: a request
    that fails with 408/429/5xx or a dropped connection is retried up to ``max_retries`` times,
    waiting ``retry_delay`` seconds and doubling (capped at 30 s, or as the server's Retry-After says).
    ``timeout`` bounds the whole of one request, its tries and waits included; while requests wait
    for an answer, a line every LOG_EVERY seconds says for how long (a silent server is never silence)."""

    def __init__(
        self,
        model: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        retry_delay: float,
        connections: int = 100,
    ):
        self.model = model
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.retry_delay = retry_delay
        import httpx  # only where a server is spoken to: the command line starts without it

        headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {api_key}"} if api_key else {})
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._http = httpx.Client(headers=headers, timeout=timeout, limits=limits)
        self._waiting = Waiting(timeout)

    def request(self, server: str, path: str, payload: dict | None, retry_connection: bool = True) -> Any:
        return self.dated_request(server, path, payload, retry_connection)[0]

    def dated_request(
        self, server: str, path: str, payload: dict | None, retry_connection: bool = True
    ) -> tuple[Any, float]:
        """One HTTP call (POST with a payload, else GET) with retries; the decoded JSON answer and
        the server's time of answering. A server that cannot be reached, does not answer within
        ``timeout`` or keeps failing raises ServerDown."""
        import httpx  # loaded already, by the client

        url = server + path
        deadline = time.monotonic() + self.timeout
        with self._waiting.on(server):
            for attempt in range(self.max_retries + 1):
                left = deadline - time.monotonic()
                try:
                    response = self._http.request("GET" if payload is None else "POST", url, json=payload, timeout=left)
                except httpx.TransportError as e:  # refused, dropped or timed out
                    if retry_connection and self._wait(attempt, None, deadline):
                        continue
                    raise self._unanswered(server, url, attempt, e) from None
                if response.is_success:
                    break
                if response.status_code in RETRIED_STATUS and self._wait(attempt, response.headers, deadline):
                    continue
                message = server_message(response.content)
                raise self._http_error(server, url, response.status_code, message, attempt + 1)
        return self._answer(server, url, payload, response)

    def _answer(self, server: str, url: str, payload: dict | None, response: httpx.Response) -> tuple[Any, float]:
        """The decoded answer and the server's time; an answer for another model is refused."""
        try:
            body = response.json()
        except ValueError:
            raise RuevalError(f"the server at {url} did not answer with JSON: {response.content[:200]!r}") from None
        named = body.get("model") if payload is not None and isinstance(body, dict) else None
        if named is not None and named != self.model and not self._same_model(server, named):
            raise RuevalError(
                f"the server at {url} answered for the model '{named}', not '{self.model}' as asked: "
                "another model is behind this address; its answer is not used"
            )
        return body, _server_time(response.headers.get("Date"))

    def _same_model(self, server: str, named: Any) -> bool:
        """Whether an answer naming ``named`` is the asked model's: vLLM answers with the first of a
        model's served names, so a name the server lists with the same weights (root) is the same model."""
        try:
            listing = self.request(server, "/models", None)
        except ClientError:  # no /models: nothing says the two names are one model
            return False
        entries = listing.get("data", []) if isinstance(listing, dict) else []
        roots = {str(m.get("id")): m.get("root") for m in entries if isinstance(m, dict)}
        return roots.get(self.model) is not None and roots.get(str(named)) == roots.get(self.model)

    def _wait(self, attempt: int, headers: httpx.Headers | None, deadline: float) -> bool:
        """Wait before the next try; False when there is none: the tries or the time are used up."""
        # the jitter keeps many clients that failed together from retrying together
        delay = min(MAX_BACKOFF, self.retry_delay * 2**attempt) * random.uniform(0.8, 1.2)
        retry_after = headers.get("Retry-After") if headers is not None else None
        if retry_after and retry_after.strip().isdigit():
            delay = min(MAX_BACKOFF, float(retry_after))
        if attempt == self.max_retries or time.monotonic() + delay >= deadline:
            return False
        time.sleep(delay)
        return True

    def _unanswered(self, server: str, url: str, attempt: int, error: httpx.TransportError) -> ServerDown:
        import httpx  # loaded already, by the client

        tries = f" (tried {attempt + 1} times)" if attempt else ""
        if isinstance(error, httpx.TimeoutException):
            return ServerDown(
                f"the server at {url} did not answer within {self.timeout:g} s{tries}; --timeout SECONDS waits longer"
            )
        return ServerDown(
            f"cannot reach an OpenAI-compatible server at {server}{tries}: {str(error) or type(error).__name__}; "
            "is it running, and does the URL end in /v1?"
        )

    def _http_error(self, server: str, url: str, status: int, message: str, tries: int) -> Exception:
        if status in (401, 403):
            return RuevalError(f"the server at {url} refused the API key (HTTP {status}: {message})")
        if status in RETRIED_STATUS:
            return ServerDown(f"the server at {url} kept failing after {tries} tries (HTTP {status}): {message}")
        if status == 404 and "model" in message.lower():
            return ClientError(status, f"the server at {server} has no model '{self.model}' ({message})")
        if status == 404:
            return ClientError(status, f"the server has no {url} (HTTP 404: {message}); does the base URL end in /v1?")
        return ClientError(status, f"the server at {url} rejected the request (HTTP {status}): {message}")


class ClientError(RuevalError):
    """A 4xx answer: the request itself was refused; retrying it unchanged cannot help."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(message)


def server_message(raw: bytes) -> str:
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
