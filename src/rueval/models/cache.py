"""A persistent request cache: SQLite in WAL mode, one row per computed request.

Every batch a backend finishes is committed at once, so a run killed at any point (even with
kill -9) keeps everything but the batch in flight; the next run recomputes only the rest.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rueval.models.base import Request

# A request type's version goes up when its results change meaning, so older cached results are
# not served: generations 2 = each sampled request draws from its own generator (batch-independent).
VERSIONS = {"Loglikelihood": 1, "Generation": 2}


def request_key(identity: str, request: Request) -> str:
    """Model identity (path or hub id and revision) + request type, version and fields."""
    kind = type(request).__name__
    fields = [identity, kind, asdict(request)] + ([VERSIONS[kind]] if VERSIONS[kind] > 1 else [])
    payload = json.dumps(fields, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class RequestCache:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a crashed process loses no commit
        self._db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        keys = list(keys)
        found: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, value in self._db.execute(f"SELECT key, value FROM results WHERE key IN ({marks})", chunk):
                found[key] = json.loads(value)
        return found

    def put_many(self, items: Mapping[str, Any]) -> None:
        with self._db:  # one transaction per finished batch
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO results (key, value) VALUES (?, ?)",
                [(key, json.dumps(value, ensure_ascii=False)) for key, value in items.items()],
            )

    def close(self) -> None:
        self._db.close()
