"""Processes that open one new request cache at the same instant (the processes of a launch) all keep it:
none gives it up on SQLite's "database is locked", and every row each commits is there."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

PROCESSES, ROUNDS = 6, 8  # the race is a matter of timing: about one round in eight lost a process before
OPEN_AND_WRITE = """
import sys, time
from pathlib import Path
from rueval.models.cache import RequestCache
start = float(sys.argv[2])
while time.time() < start:
    pass
cache = RequestCache(Path(sys.argv[1]))
cache.get_many(["absent"])
cache.put_many({f"{sys.argv[3]}-{i}": i for i in range(20)})
print("kept" if cache._db is not None else "given up")
"""


def test_processes_opening_one_new_cache_at_once_all_keep_it(tmp_path):
    for round in range(ROUNDS):
        path = tmp_path / f"round{round}" / "requests.sqlite"
        start = time.time() + 3  # every process imported and waiting by then
        running = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AND_WRITE, str(path), repr(start), f"p{p}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for p in range(PROCESSES)
        ]
        ended = [process.communicate(timeout=120) for process in running]
        assert [out.strip() for out, _ in ended] == ["kept"] * PROCESSES, [err for _, err in ended]
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == PROCESSES * 20
