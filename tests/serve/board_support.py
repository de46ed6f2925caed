"""Helpers of the leaderboard service's tests: a gold from the bundled samples, zips, and real
processes (`rueval serve`, a PostgreSQL cluster of the tests' own). Fixtures are in conftest.py."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from rueval.data.local import SAMPLES_DIR
from rueval.tasks import RSG

POSTGRES_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))


def head_revision() -> str:
    """The newest migration's revision, which a migrated database records."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from rueval.serve.db import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def write_gold(folder: Path, tasks: tuple[str, ...] | None = None) -> Path:
    """A gold in the RSG layout from the bundled samples: each task's train, and its val (labelled)
    as the test set; LiDiRus as it is. ``tasks``: only these."""
    for task in RSG.tasks:
        if tasks is not None and task.name not in tasks:
            continue
        source, target = SAMPLES_DIR / task.folder, folder / task.folder
        target.mkdir(parents=True, exist_ok=True)
        if task.name == "lidirus":
            shutil.copy(source / "LiDiRus.jsonl", target / "LiDiRus.jsonl")
        else:
            shutil.copy(source / "train.jsonl", target / "train.jsonl")
            shutil.copy(source / "val.jsonl", target / "test.jsonl")
    return folder


def zip_of(files: dict[str, str | bytes | list]) -> bytes:
    """A zip of the given members: text, bytes, or a list of records written as JSON lines."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            if isinstance(content, list):
                content = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in content)
            archive.writestr(name, content)
    return buffer.getvalue()


def members_of(data: bytes) -> dict[str, list[dict]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {
            name: [json.loads(line) for line in archive.read(name).decode().splitlines() if line.strip()]
            for name in archive.namelist()
        }


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`rueval serve` in a process group of its own (the server and its workers), on a free port."""

    def __init__(self, gold_dir: Path, store: Path, db: str | None = None, *options: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "rueval", "serve", "--gold", str(gold_dir), "--store", str(store)]
        command += ["--port", str(self.port), *(["--db", db] if db else []), *options]
        # a restarted server may get the port of the one before: each keeps its own log
        self.log = tempfile.NamedTemporaryFile(
            dir=store.parent, prefix=f"serve-{self.port}-", suffix=".log", delete=False
        )
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"rueval serve exited with {self.process.returncode}: {self.read_log()}")
            try:
                if httpx.get(f"{self.url}/api/leaderboard", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError(f"rueval serve did not answer within {timeout_s} s: {self.read_log()}")

    def read_log(self, tail: int | None = 3000) -> str:
        """The last ``tail`` characters of its log (None: all of it)."""
        self.log.flush()
        text = Path(self.log.name).read_text(errors="replace")
        return text if tail is None else text[-tail:]

    def send(self, number: int) -> None:
        """A signal to the server and its workers at once."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, number)

    def kill(self) -> None:
        """SIGKILL to the server and its workers at once, as a crash would."""
        self.send(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def wait_for(client: httpx.Client, id: int, token: str, timeout_s: float = 120) -> dict:
    """Poll a submission until it is scored or failed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = client.get(f"/api/submissions/{id}", headers=bearer(token)).json()
        if found["status"] in ("done", "failed"):
            return found
        time.sleep(0.25)
    raise AssertionError(f"submission {id} is still {found['status']} after {timeout_s} s")


class Postgres:
    """A PostgreSQL cluster of its own on a free port, made with initdb and run with pg_ctl. initdb
    refuses root: as root it runs as nobody, in a folder under /tmp that nobody can reach."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="rueval-pg-", dir="/tmp"))
        self.as_nobody = os.geteuid() == 0
        if self.as_nobody:
            shutil.chown(self.root, "nobody")
        self.port = free_port()
        data = self.root / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.root / "log"), "-w", "start")
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "board")

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self.as_nobody:
            command = ["runuser", "-u", "nobody", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.root)
        assert result.returncode == 0, f"{program}: {result.stdout}{result.stderr}"

    def url(self, database: str = "board") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


class WriteLock:
    """Another process holding SQLite's write lock on the board's database (BEGIN IMMEDIATE, then
    sleeping) until stopped, as a second writer or an operator's sqlite3 shell would."""

    HOLDER = (
        "import sqlite3, sys, time\n"
        "connection = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "connection.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n"
    )

    def __init__(self, database: Path, seconds: float = 60):
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.HOLDER, str(database), str(seconds)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout.readline().strip() == "locked"

    def release(self) -> None:
        self.process.kill()
        self.process.wait(10)


@contextmanager
def served_in_thread(app, limits) -> Iterator[str]:
    """The application under uvicorn as `rueval serve` configures it, in a thread of this process (so
    that a test can inject a fault into it); yields its address."""
    import uvicorn

    from rueval.serve.connections import server_config

    port = free_port()
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, limits))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
