"""The board keeps answering and keeps scoring: reads never wait for another process's write lock, a
killed worker is restarted, a worker waits out a locked database, and a full or read-only store is
a 503 naming no path, with the uploads accepted before it scored once space returns."""

import errno
import logging
import os
import re
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from board_support import Server, WriteLock, bearer, served_in_thread, wait_for
from sqlalchemy.exc import DBAPIError

from rueval.serve import db as db_module
from rueval.serve.app import create_app
from rueval.serve.auth import add_team
from rueval.serve.connections import ConnectionLimits
from rueval.serve.db import Database, Submission, Team, database_url
from rueval.serve.service import ServeConfig, Service
from rueval.serve.worker import Worker


def cli_team(cli, store, name: str) -> str:
    result = cli("serve-admin", "add-team", name, "--store", store)
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_read_only_session_cannot_write_and_a_write_session_can(tmp_path, request, backend):
    if backend == "sqlite":
        db, refusal = Database(database_url(None, tmp_path)), "attempt to write a readonly database"
    else:
        url = request.getfixturevalue("postgres").create_database("read_only")
        db, refusal = Database(url), "read-only transaction"
    try:
        with pytest.raises(DBAPIError, match=refusal), db.session(read_only=True) as session:
            session.add(Team(name="t", created=time.time()))
        with db.session() as session:
            session.add(Team(name="t", created=time.time()))
        with db.session(read_only=True) as session:
            assert [team.name for team in session.query(Team)] == ["t"]
    finally:
        db.close()


@pytest.mark.slow
def test_pages_and_the_get_api_answer_while_another_process_holds_the_write_lock(
    cli, gold_dir, tmp_path, servers, submission_zip
):
    store = tmp_path / "store"
    token = cli_team(cli, store, "alpha")
    server = Server(gold_dir, store)
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        files = {"file": ("m.zip", submission_zip("majority"))}
        id = client.post("/api/submissions", files=files, data={"public": "true"}, headers=bearer(token)).json()["id"]
        wait_for(client, id, token)
        lock = WriteLock(store / db_module.SQLITE_FILE)
        try:
            for path, headers in (
                ("/", {}),
                ("/api/leaderboard", {}),
                (f"/api/submissions/{id}", bearer(token)),
                (f"/submissions/{id}", {}),
                ("/teams/alpha", {}),
            ):
                started = time.monotonic()
                answer = client.get(path, headers=headers)
                took = time.monotonic() - started
                assert answer.status_code == 200 and took < 5, (path, answer.status_code, took)  # not 30 s
        finally:
            lock.release()


@pytest.mark.slow
def test_a_killed_worker_is_restarted_once_and_scores_what_was_uploaded_meanwhile(
    cli, gold_dir, tmp_path, servers, submission_zip
):
    store = tmp_path / "store"
    token = cli_team(cli, store, "alpha")
    server = Server(gold_dir, store)
    servers.append(server)
    [first] = re.findall(r"started scoring worker (\d+)", server.read_log(tail=None))
    os.kill(int(first), signal.SIGKILL)
    with httpx.Client(base_url=server.url, headers=bearer(token), timeout=60) as client:
        uploaded = client.post("/api/submissions", files={"file": ("m.zip", submission_zip("majority"))})
        assert uploaded.status_code == 202
        assert wait_for(client, uploaded.json()["id"], token, timeout_s=60)["status"] == "done"
    log = server.read_log(tail=None)
    assert log.count(f"scoring worker {first} was killed by signal 9; restarting it in 1 s") == 1
    assert len(set(re.findall(r"started scoring worker (\d+)", log)) - {first}) == 1


def open_service(gold_dir, gold, store: Path) -> Service:
    return Service.open(ServeConfig(gold_dir, store, database_url(None, store), daily_limit=5), gold)


def scoring(service: Service) -> tuple[Worker, threading.Event, threading.Thread]:
    worker = Worker(service.db, service.gold, service.store, lease_s=5, secret=service.auth.secret)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    return worker, stop, thread


def status_of(service: Service, id: int) -> str:
    with service.db.session(read_only=True) as session:
        return session.get(Submission, id).status


def wait_status(service: Service, id: int, wanted: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while status_of(service, id) != wanted:
        assert time.monotonic() < deadline, f"submission {id} is {status_of(service, id)}, not {wanted}"
        time.sleep(0.1)


def test_a_worker_waits_out_a_locked_database_and_then_scores_the_job(
    gold_dir, gold, tmp_path, monkeypatch, submission_zip, caplog
):
    monkeypatch.setattr(db_module, "SQLITE_WAIT_S", 0.2)  # a writer gives up on the lock at once
    service = open_service(gold_dir, gold, tmp_path / "store")
    add_team(service.db, "alpha", service.auth.secret)
    team = service.team_named("alpha")
    id = service.accept(team, submission_zip("majority"), "m", True).id
    lock = WriteLock(tmp_path / "store" / db_module.SQLITE_FILE)
    _, stop, thread = scoring(service)
    try:
        with caplog.at_level(logging.WARNING, logger="rueval.serve.worker"):
            time.sleep(2.5)
            assert status_of(service, id) == "queued" and thread.is_alive()
            lock.release()
            wait_status(service, id, "done")
        assert "database is locked; trying again in 1 s" in caplog.text
    finally:
        lock.release()
        stop.set()
        thread.join(30)
        service.db.close()


class FullStore:
    """Fault injection: every file write under the store fails with ``code`` (a full disk: ENOSPC, a
    read-only one: EROFS, one whose owner or mode changed: EACCES) until ``free()``, as the OS's write
    would; the database, which SQLite writes by itself, is spared."""

    def __init__(self, monkeypatch, root: Path, code: int):
        self.root, self.code, self.full = root.resolve(), code, True
        for method in ("write_bytes", "write_text"):
            monkeypatch.setattr(Path, method, self._failing(getattr(Path, method)))

    def _failing(self, write):
        def failing(path: Path, *args, **kwargs):
            if self.full and self.root in path.resolve().parents:
                raise OSError(self.code, os.strerror(self.code), str(path))
            return write(path, *args, **kwargs)

        return failing

    def free(self) -> None:
        self.full = False


@pytest.mark.parametrize(
    "code", [errno.ENOSPC, errno.EROFS, errno.EACCES], ids=["full", "read-only", "not-the-boards-to-write"]
)
def test_a_full_or_read_only_store_is_a_503_naming_no_path_and_scoring_resumes_when_it_is_writable(
    gold_dir, gold, tmp_path, monkeypatch, submission_zip, caplog, code
):
    store = tmp_path / "store"
    service = open_service(gold_dir, gold, store)
    token = add_team(service.db, "alpha", service.auth.secret)
    with served_in_thread(create_app(service), ConnectionLimits(read_timeout_s=5)) as url:
        with httpx.Client(base_url=url, headers=bearer(token), timeout=60) as client:
            accepted = client.post("/api/submissions", files={"file": ("h.zip", submission_zip("heuristic"))})
            assert accepted.status_code == 202
            disk = FullStore(monkeypatch, store, code)
            refused = client.post("/api/submissions", files={"file": ("m.zip", submission_zip("majority"))})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "60"
            assert "(its storage is full, read-only or busy); try again later" in refused.json()["error"]
            assert str(tmp_path) not in refused.text and "uploads" not in refused.text
            assert client.get("/").status_code == client.get("/api/leaderboard").status_code == 200
            _, stop, thread = scoring(service)
            try:
                with caplog.at_level(logging.WARNING, logger="rueval.serve.worker"):
                    time.sleep(2.5)  # the worker scores, cannot store the results, gives the job back
                    id = accepted.json()["id"]
                    assert client.get(f"/api/submissions/{id}").json()["status"] in ("queued", "scoring")
                    disk.free()
                    scored = wait_for(client, id, token, timeout_s=60)
                assert scored["status"] == "done" and scored["error"] is None
                assert f"{os.strerror(code)}); trying again in 1 s" in caplog.text
                again = client.post("/api/submissions", files={"file": ("m.zip", submission_zip("majority"))})
                assert again.status_code == 202
            finally:
                stop.set()
                thread.join(30)
    service.db.close()


@pytest.mark.slow
def test_sigterm_to_the_server_alone_stops_its_workers_and_closes_the_database(gold_dir, tmp_path, servers):
    store = tmp_path / "store"
    server = Server(gold_dir, store)
    servers.append(server)
    [worker] = re.findall(r"started scoring worker (\d+)", server.read_log(tail=None))
    os.kill(server.process.pid, signal.SIGTERM)  # as an operator or a service manager would
    assert server.process.wait(30) == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):
        os.kill(int(worker), 0)  # stopped and reaped by the server
    assert sorted(path.name for path in store.iterdir()) == [db_module.SQLITE_FILE]  # no WAL left: closed


def test_the_workers_the_board_starts_check_uploads_with_the_boards_size_limit(cli, gold_dir, tmp_path, monkeypatch):
    """`rueval serve --max-upload-mb 50` accepts a 30 MB zip: its workers must check it with the same
    limit (they checked every upload against the default 20 MiB and failed it)."""
    import rueval.serve.worker
    from rueval.serve.server import worker_command
    from rueval.serve.upload import UploadLimits

    store = tmp_path / "store"
    config = ServeConfig(gold_dir, store, database_url(None, store), limits=UploadLimits(upload_bytes=50 * 2**20 + 3))
    started = []
    monkeypatch.setattr(rueval.serve.worker, "run_worker", lambda *args: started.append(args))
    command = worker_command(config, 5.0)
    result = cli(*command[command.index("serve-worker") :])
    assert result.exit_code == 0, result.output
    ((*_, limits, parent),) = started
    assert limits == config.limits and parent is None
