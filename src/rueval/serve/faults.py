"""Faults of the board's storage that pass: a database locked by another writer or out of reach, a
disk full or read-only. The web application answers them 503 with a message that names no path
(rueval.serve.app); a worker gives its job back and tries again later, waiting longer each time
(rueval.serve.worker); nothing is marked failed because of them.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from sqlalchemy.exc import OperationalError

# a disk full or read-only, or a store the board's user may not write (its owner or mode changed)
FULL_OR_READ_ONLY = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})
UNAVAILABLE = "the board cannot store anything right now (its storage is full, read-only or busy); try again later"
RETRY_AFTER_S = 60


def is_storage_fault(error: BaseException) -> bool:
    """SQLAlchemy's OperationalError (the DB-API's errors of the database's own operation: SQLite's
    "database is locked" and "database or disk is full", a PostgreSQL server gone), or a write that
    failed on a full or read-only disk (an OSError, or rueval's WriteError, with its errno)."""
    return isinstance(error, OperationalError) or getattr(error, "errno", None) in FULL_OR_READ_ONLY


def described(error: BaseException) -> str:
    """The fault in one line, for the operator's log (the database's own message, not the SQL)."""
    cause = getattr(error, "orig", None) or error
    return (str(cause).strip().splitlines() or [type(cause).__name__])[0]


@dataclass
class Backoff:
    """Delays that double from ``first_s`` up to ``most_s``; ``reset()`` after a success."""

    first_s: float = 1.0
    most_s: float = 60.0
    failures: int = 0

    def next(self) -> float:
        delay = min(self.most_s, self.first_s * 2.0 ** min(self.failures, 30))
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0
