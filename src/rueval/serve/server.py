"""`rueval serve`: the database migrated, the gold read and its reference models stored, scoring
workers started as processes of their own (`rueval serve-worker`) and restarted if they exit, then
the web application under uvicorn (rueval.serve.connections) until interrupted; the workers stop
with it."""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from rueval.core.errors import RuevalError
from rueval.serve.app import create_app
from rueval.serve.connections import ConnectionLimits, server_config
from rueval.serve.faults import Backoff
from rueval.serve.logs import configure_logging
from rueval.serve.queue import check_lease
from rueval.serve.service import ServeConfig, Service

log = logging.getLogger("rueval.serve")
FILES_BESIDE = 100  # files the server opens beside its connections: the database, the store, pipes
STEADY_S = 60.0  # a worker that ran this long before it exited is restarted after the shortest delay
WATCH_S = 0.5


def worker_command(config: ServeConfig, lease_s: float, parent: int | None = None) -> list[str]:
    command = [sys.executable, "-m", "rueval", "serve-worker", "--gold", str(config.gold), "--db", config.db]
    command += ["--store", str(config.store), "--lease", str(lease_s), "--secret-file", str(config.secret_path)]
    command += ["--max-upload-mb", repr(config.limits.upload_bytes / 2**20)]  # the uploads it accepted, re-checked
    return command + (["--parent", str(parent)] if parent else [])


def run_server(
    config: ServeConfig,
    host: str,
    port: int,
    workers: int,
    lease_s: float,
    limits: ConnectionLimits,
) -> None:
    import uvicorn

    check_lease(lease_s)  # before anything starts: the workers would refuse it one by one
    _check_address(host, port)
    _allow_open_files(limits.connections)
    configure_logging()
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    service = Service.open(config)
    pool = Workers(worker_command(config, lease_s, os.getpid()), workers)
    try:
        log.info("board on http://%s:%d with %d worker(s), gold %s", host, port, workers, config.gold)
        app = create_app(service, limits.read_timeout_s)
        uvicorn.Server(server_config(app, host, port, limits)).run()
    finally:
        pool.stop()
        service.db.close()


def _exit_on_sigterm(number: int, _frame: object) -> None:
    """SIGTERM ends the process through its ``finally`` (the workers stopped, the database closed):
    uvicorn shuts down on it, then raises it again under this handler."""
    raise SystemExit(128 + number)


@dataclass
class _Slot:
    process: subprocess.Popen[bytes]
    started: float
    backoff: Backoff = field(default_factory=Backoff)
    restart_at: float | None = None  # None while it runs; when it is restarted (inf: never)


class Workers:
    """The scoring workers `rueval serve` starts, each restarted when it fails (killed, out of memory,
    a bug: any exit but a stop it was asked for, code 0): after 1 s, twice as long after each failure
    in a row (up to 60 s), and after 1 s again once it had run STEADY_S. One log line per restart."""

    def __init__(self, command: list[str], count: int):
        self.command = command
        self.slots = [self._start() for _ in range(count)]
        self._stopping = threading.Event()
        self._watching = threading.Thread(target=self._watch, name="rueval-workers", daemon=True)
        self._watching.start()

    def _start(self, slot: _Slot | None = None) -> _Slot:
        process = subprocess.Popen(self.command)
        log.info("started scoring worker %d", process.pid)
        if slot is None:
            return _Slot(process, time.monotonic())
        slot.process, slot.started, slot.restart_at = process, time.monotonic(), None
        return slot

    def _watch(self) -> None:
        while not self._stopping.wait(WATCH_S):
            now = time.monotonic()
            for slot in self.slots:
                if slot.restart_at is None and slot.process.poll() == 0:  # stopped when asked (SIGTERM)
                    log.info("scoring worker %d stopped", slot.process.pid)
                    slot.restart_at = math.inf
                elif slot.restart_at is None and slot.process.poll() is not None:
                    if now - slot.started >= STEADY_S:
                        slot.backoff.reset()
                    delay = slot.backoff.next()
                    slot.restart_at = now + delay
                    code = slot.process.returncode
                    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
                    log.warning("scoring worker %d %s; restarting it in %g s", slot.process.pid, how, delay)
                elif slot.restart_at is not None and now >= slot.restart_at:
                    self._start(slot)

    def stop(self) -> None:
        """Stop watching, then each worker (it finishes the submission it is scoring first)."""
        self._stopping.set()
        self._watching.join()
        for slot in self.slots:
            slot.process.terminate()
        for slot in self.slots:
            try:
                slot.process.wait(10)
            except subprocess.TimeoutExpired:
                slot.process.kill()


def _check_address(host: str, port: int) -> None:
    """The address can be listened on (uvicorn would exit with its own log lines and code 3)."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as e:  # an address that is no host's, a port in use or reserved
        raise RuevalError(f"--host {host} --port {port}: cannot listen there ({e.strerror or e})") from None


def _allow_open_files(connections: int) -> None:
    """The process may open ``connections`` files and FILES_BESIDE more, so the caps, not the system,
    refuse a flood ("Too many open files"): its soft limit is raised to that if the hard one allows."""
    try:
        import resource
    except ImportError:  # not a Unix: no such limit to raise
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = connections + FILES_BESIDE
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise RuevalError(
            f"--max-connections {connections}: this process may open at most {hard} files (ulimit -Hn); "
            f"give at most {hard - FILES_BESIDE}"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
