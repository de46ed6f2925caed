"""`rueval serve`: the database migrated, the gold read and its reference models stored, scoring
workers started as processes of their own (`rueval serve-worker`), then the web application under
uvicorn until interrupted; the workers stop with it."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys

from rueval.core.errors import RuevalError
from rueval.serve.app import create_app
from rueval.serve.queue import check_lease
from rueval.serve.service import ServeConfig, Service

log = logging.getLogger("rueval.serve")


def worker_command(config: ServeConfig, lease_s: float, parent: int | None = None) -> list[str]:
    command = [sys.executable, "-m", "rueval", "serve-worker", "--gold", str(config.gold), "--db", config.db]
    command += ["--store", str(config.store), "--lease", str(lease_s), "--secret-file", str(config.secret_path)]
    return command + (["--parent", str(parent)] if parent else [])


def run_server(config: ServeConfig, host: str, port: int, workers: int, lease_s: float) -> None:
    import uvicorn

    check_lease(lease_s)  # before anything starts: the workers would refuse it one by one
    _check_address(host, port)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    service = Service.open(config)
    started = [subprocess.Popen(worker_command(config, lease_s, os.getpid())) for _ in range(workers)]
    try:
        log.info("board on http://%s:%d with %d worker(s), gold %s", host, port, workers, config.gold)
        # proxy_headers=False: the app believes X-Forwarded-For from --trusted-proxy only (rueval.serve.app)
        uvicorn.run(
            create_app(service),
            host=host,
            port=port,
            log_level="info",
            timeout_graceful_shutdown=5,
            proxy_headers=False,
        )
    finally:
        for worker in started:
            worker.terminate()
        for worker in started:
            try:
                worker.wait(10)
            except subprocess.TimeoutExpired:
                worker.kill()
        service.db.close()


def _check_address(host: str, port: int) -> None:
    """The address can be listened on (uvicorn would exit with its own log lines and code 3)."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as e:  # an address that is no host's, a port in use or reserved
        raise RuevalError(f"--host {host} --port {port}: cannot listen there ({e.strerror or e})") from None
