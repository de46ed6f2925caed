"""A persistent request cache: SQLite in WAL mode, one row per computed request.

Every batch a backend finishes is committed at once, so a run killed at any point (even with
kill -9) keeps everything but the batch in flight; the next run recomputes only the rest.

A cache file that cannot be read (damaged, not SQLite) or that a newer rueval wrote (its
``user_version`` is above FORMAT) is reported with its path and left alone: the run goes on
without it, neither reading nor writing it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rueval.models.base import Generation, Request

# A request type's version goes up when its results change meaning, so older cached results are
# not served: generations 2 = each sampled request draws from its own generator; 3 = hf: generates one
# prompt at a time (a batch's shape changed the last bits of the logits, and so some texts); 4 = hf: matches
# stops in the generated text alone and ends no text in U+FFFD (as vLLM and servers), and a backend whose texts
# depend on how it generates names its mode in the key (hf:'s "batched"; one at a time is keyed as before).
VERSIONS = {"Loglikelihood": 1, "Generation": 4, "TokenLogprobs": 1}
KEYED_MODES = ("batched",)
WAIT_S = 60  # how long a process waits for another's lock on the cache
# fields added to a request type later, left out of its key at their default so that older keys stay valid
ADDED = {"rolling": False}
FORMAT = 1  # the file's layout, in SQLite's user_version; a newer rueval that changes it raises it
log = logging.getLogger(__name__)


def request_key(identity: str, request: Request, generation_mode: str | None = None) -> str:
    """Model identity (path or hub id and revision) + request type, version and fields (+ the backend's
    generation mode for a generation, where it is one of KEYED_MODES)."""
    kind = type(request).__name__
    values = {name: value for name, value in asdict(request).items() if name not in ADDED or value != ADDED[name]}
    if isinstance(request, Generation) and generation_mode in KEYED_MODES:
        values["generation_mode"] = generation_mode
    fields = [identity, kind, values] + ([VERSIONS[kind]] if VERSIONS[kind] > 1 else [])
    payload = json.dumps(fields, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate: no error


class RequestCache:
    """``refresh``: nothing is read (every request is computed again), and results overwrite the stored ones."""

    def __init__(self, path: Path, refresh: bool = False):
        self.path = path
        self.refresh = refresh
        self._db: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=WAIT_S, isolation_level=None, check_same_thread=False)
            version = _opened(self._db)
        except (sqlite3.Error, OSError) as e:
            self._give_up(f"it cannot be read ({e})")
            return
        if version > FORMAT:
            self._give_up(f"it was written by a newer rueval (format {version}, this one reads {FORMAT})")

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The stored results of the keys that have one; a damaged row counts as missing."""
        keys = list(keys)
        found: dict[str, Any] = {}
        if self._db is None or self.refresh:
            return found
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, value in self._db.execute(f"SELECT key, value FROM results WHERE key IN ({marks})", chunk):
                    try:
                        found[key] = json.loads(value)
                    except (TypeError, ValueError):
                        continue
        except sqlite3.Error as e:
            self._give_up(f"it cannot be read ({e})")
            return {}
        return found

    def put_many(self, items: Mapping[str, Any]) -> None:
        if self._db is None:
            return
        try:
            with self._db:  # one transaction per finished batch
                # IMMEDIATE: the write lock is waited for up front; a deferred transaction that waits for it
                # after reading fails at once in WAL mode when another process commits meanwhile
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    "INSERT OR REPLACE INTO results (key, value) VALUES (?, ?)",
                    [(key, _stored(value)) for key, value in items.items()],
                )
        except sqlite3.Error as e:
            self._give_up(f"it cannot be written ({e})")

    def _give_up(self, reason: str) -> None:
        """Report the file and go on without it."""
        log.warning("the request cache %s is ignored: %s; move it away to start a new one", self.path, reason)
        if self._db is not None:
            self._db.close()
        self._db = None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def _opened(db: sqlite3.Connection) -> int:
    """Set the file up (WAL, the table, the format; a file of a newer format is left as it is) and give its
    format. Processes that open one new cache at once (a launch's) meet SQLite's "database is locked" where its
    busy wait does not apply (turning the file to WAL while another process does): set up again until WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > FORMAT:
                return int(version)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a crashed process loses no commit
            db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute(f"PRAGMA user_version = {FORMAT}")
            return FORMAT
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _stored(value: Any) -> str:
    """A result as its row holds it: JSON, readable UTF-8; escaped (``\\ud800``) where a text holds a lone
    surrogate (a server's answer may), which SQLite cannot store as text."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value)
    return text
