"""The database and its queue: migrations give the schema the code declares, an accepted upload is
a submission and a job written together, a job is claimed once under a lease, and a lease that
runs out (a worker that died) gives the job to the next worker."""

import math
import secrets
import socket
import time

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, select

from rueval.core.errors import RuevalError
from rueval.serve import queue
from rueval.serve.auth import add_team
from rueval.serve.db import Base, Database, Job, Submission, Team, database_url


def test_the_migrations_make_exactly_the_tables_the_code_declares(tmp_path):
    db = Database(database_url(None, tmp_path))
    with db.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        assert "alembic_version" in inspect(connection).get_table_names()
    db.close()
    Database(database_url(None, tmp_path)).close()  # a second start finds the schema current


def test_database_urls_default_to_sqlite_in_the_store_and_run_postgresql_on_psycopg3(tmp_path):
    assert database_url(None, tmp_path) == f"sqlite:///{tmp_path.resolve()}/board.sqlite3"
    assert database_url("postgresql://u:p@h:5/b", tmp_path) == "postgresql+psycopg://u:p@h:5/b"
    for bad in ("mysql://h/b", "nonsense"):
        with pytest.raises(RuevalError, match=f"--db {bad}"):
            database_url(bad, tmp_path)


def test_an_unreachable_database_is_one_clear_line(tmp_path):
    with pytest.raises(RuevalError, match="database postgresql"):
        Database("postgresql+psycopg://nobody@127.0.0.1:1/none")


def test_a_store_that_is_a_file_is_one_clear_line(tmp_path):
    (tmp_path / "board").write_text("mine", encoding="utf-8")
    with pytest.raises(RuevalError, match=r"board: cannot hold the board's database \(a file, not a folder\)"):
        Database(database_url(None, tmp_path / "board"))
    assert (tmp_path / "board").read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize("lease", [math.inf, math.nan, 0.5, "30"])
def test_a_lease_that_never_runs_out_or_is_no_number_is_refused(lease):
    with pytest.raises(RuevalError, match=f"--lease {lease}: expected a finite number of seconds, at least 1"):
        queue.check_lease(lease)


def test_the_commands_refuse_an_endless_lease_or_a_file_as_store_before_anything_starts(cli, gold_dir, tmp_path):
    (tmp_path / "file").write_text("mine", encoding="utf-8")
    for command in ("serve", "serve-worker"):
        for flags, said in (
            (("--lease", "inf", "--store", tmp_path / "board"), "error: --lease inf: expected a finite number"),
            (("--store", tmp_path / "file"), f"error: {tmp_path / 'file'}: cannot hold the board's database"),
        ):
            result = cli(command, "--gold", gold_dir, *flags)
            assert result.exit_code == 2 and result.stderr.startswith(said), result.output
    assert not (tmp_path / "board").exists()


def test_serve_on_an_address_it_cannot_listen_on_is_one_line_before_anything_starts(cli, gold_dir, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        for host, said in (("999.1.1.1", "Name or service not known"), ("127.0.0.1", "Address already in use")):
            result = cli("serve", "--gold", gold_dir, "--store", tmp_path / "board", "--host", host, "--port", port)
            assert result.exit_code == 2, result.output
            assert result.stderr.startswith(f"error: --host {host} --port {port}: cannot listen there ({said}")
    assert not (tmp_path / "board").exists()


def queued(db: Database, count: int) -> list[int]:
    add_team(db, "team", secrets.token_bytes(32))
    with db.session() as session:
        team = session.scalars(select(Team)).one()
        ids = [queue.enqueue(session, team, f"s{i}", False, "0" * 64, "g", False, ()).id for i in range(count)]
    return ids


def upload_row(db: Database) -> None:
    from rueval.serve.db import Upload

    with db.session() as session:
        session.add(Upload(sha256="0" * 64, size=1, created=time.time()))


@pytest.fixture
def db(tmp_path):
    opened = Database(database_url(None, tmp_path))
    upload_row(opened)
    yield opened
    opened.close()


def test_a_submission_is_queued_with_its_job_in_one_transaction(db):
    add_team(db, "team", secrets.token_bytes(32))
    with pytest.raises(ZeroDivisionError), db.session() as session:
        team = session.scalars(select(Team)).one()
        queue.enqueue(session, team, "s", False, "0" * 64, "g", False, ())
        raise ZeroDivisionError  # the transaction fails after the rows were added
    with db.session() as session:
        assert session.scalars(select(Submission)).all() == [] and session.scalars(select(Job)).all() == []


def test_jobs_are_claimed_oldest_first_each_by_one_worker(db):
    ids = queued(db, 3)
    claims = [queue.claim(db, f"w{i}") for i in range(4)]
    assert [c.submission for c in claims[:3]] == ids and claims[3] is None
    with db.session() as session:
        assert {s.status for s in session.scalars(select(Submission))} == {"scoring"}


def test_a_lease_that_ran_out_gives_the_job_to_another_worker_and_the_first_cannot_finish_it(db):
    [id] = queued(db, 1)
    first = queue.claim(db, "dead", lease_s=0.05)
    time.sleep(0.1)
    second = queue.claim(db, "alive")
    assert second.submission == id and second.worker == "alive"
    assert not queue.renew(db, first) and not queue.finish(db, first, {}, {}, 1.0)
    assert queue.finish(db, second, {"rcb": {"score": 50.0}}, {"tasks": {}}, 50.0)
    with db.session() as session:
        submission = session.get(Submission, id)
        assert (submission.status, submission.total, session.scalars(select(Job)).all()) == ("done", 50.0, [])


def test_a_renewed_lease_keeps_the_job(db):
    queued(db, 1)
    claim = queue.claim(db, "w", lease_s=0.2)
    for _ in range(3):
        time.sleep(0.1)
        assert queue.renew(db, claim, lease_s=0.2)
    assert queue.claim(db, "other") is None


def test_a_job_that_stopped_its_worker_three_times_fails_instead_of_taking_the_next(db):
    [id] = queued(db, 1)
    for _ in range(queue.MAX_ATTEMPTS):
        assert queue.claim(db, "crashing", lease_s=0.01) is not None
        time.sleep(0.02)
    assert queue.claim(db, "next") is None
    with db.session() as session:
        submission = session.get(Submission, id)
        assert submission.status == "failed" and "stopped 3 times" in submission.error


def test_a_failure_is_recorded_with_its_message(db):
    [id] = queued(db, 1)
    assert queue.finish(db, queue.claim(db, "w"), error="RCB.jsonl:3: bad")
    with db.session() as session:
        assert (session.get(Submission, id).status, session.get(Submission, id).error) == ("failed", "RCB.jsonl:3: bad")


def test_a_released_job_is_queued_again_without_counting_the_attempt(db):
    [id] = queued(db, 1)
    first = queue.claim(db, "w")
    queue.release(db, first)
    with db.session() as session:
        job = session.scalars(select(Job)).one()
        assert (job.attempts, job.lease_until, job.worker) == (0, None, None)
        assert session.get(Submission, id).status == "queued"
    assert not queue.finish(db, first, {}, {}, 1.0)  # no longer the first worker's
    assert queue.claim(db, "other").submission == id
