"""The board on a real PostgreSQL server (a cluster of the test's own, made with initdb): the same
migrations, jobs claimed with FOR UPDATE SKIP LOCKED by workers that never wait on each other nor
take the same job, and `rueval serve --db postgresql://...` with workers in several processes."""

import secrets
import threading
import time

import httpx
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from board_support import Server, bearer, head_revision
from sqlalchemy import select, text

from rueval.serve import queue
from rueval.serve.auth import add_team
from rueval.serve.db import Base, Database, Job, Submission, Team, Upload, database_url

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_db(postgres, request):
    db = Database(database_url(postgres.create_database(f"t{abs(hash(request.node.name)) % 10**8}"), None))
    yield db
    db.close()


def queue_jobs(db: Database, count: int) -> list[int]:
    add_team(db, "team", secrets.token_bytes(32))
    with db.session() as session:
        session.add(Upload(sha256="0" * 64, size=1, created=time.time()))
        team = session.scalars(select(Team)).one()
        return [queue.enqueue(session, team, f"s{i}", False, "0" * 64, "g", False, ()).id for i in range(count)]


def test_the_migrations_make_exactly_the_declared_tables_on_postgresql(pg_db):
    assert pg_db.postgresql
    with pg_db.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        assert connection.execute(text("select version_num from alembic_version")).scalar() == head_revision()


def test_a_claim_skips_a_job_another_worker_holds_instead_of_waiting(pg_db):
    first, second = queue_jobs(pg_db, 2)
    with pg_db.engine.connect() as holder:
        holder.begin()
        holder.execute(text("select id from jobs where submission_id = :id for update"), {"id": first})
        started = time.monotonic()
        claim = queue.claim(pg_db, "other")
        assert claim.submission == second and time.monotonic() - started < 2
        holder.rollback()
    assert queue.claim(pg_db, "third").submission == first


def test_workers_claiming_at_once_take_every_job_exactly_once(pg_db):
    ids = queue_jobs(pg_db, 40)
    taken: list[int] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        while (claim := queue.claim(pg_db, name)) is not None:
            with lock:
                taken.append(claim.submission)
            assert queue.finish(pg_db, claim, {}, {}, 1.0)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == ids
    with pg_db.session() as session:
        assert session.scalars(select(Job)).all() == []
        assert {s.status for s in session.scalars(select(Submission))} == {"done"}


def test_rueval_serve_on_postgresql_with_a_second_worker_process_scores_every_upload(
    postgres, gold_dir, tmp_path, servers, submission_zip, cli
):
    url = postgres.create_database("served")
    store = tmp_path / "store"
    result = cli("serve-admin", "add-team", "alpha", "--db", url, "--store", store)  # the store's secret file
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]
    servers.append(Server(gold_dir, store, url, "--workers", "2", "--daily-limit", "20", "--min-n", "20"))
    with httpx.Client(base_url=servers[0].url, headers=bearer(token), timeout=30) as client:
        ids = [
            client.post("/api/submissions", files={"file": ("s.zip", submission_zip(model))}, data=public).json()["id"]
            for model, public in zip(("majority", "heuristic") * 3, ({"public": "true"}, {}) * 3, strict=True)
        ]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = [client.get(f"/api/submissions/{id}").json() for id in ids]
            board = client.get("/api/leaderboard").json()
            if all(f["status"] == "done" for f in found) and board["standings_current"]:
                break
            time.sleep(0.3)
    assert [f["status"] for f in found] == ["done"] * 6
    assert found[0]["total"] == found[2]["total"] and found[1]["total"] > found[0]["total"]
    # the workers stored the tied-with-leader marks of the three public (identical) zips on PostgreSQL
    assert board["standings_current"] and [row["id"] for row in board["rows"]] == ids[::2]
    assert [row["standing"]["lidirus"] for row in board["rows"]] == ["leader", "tied", "tied"]
    db = Database(database_url(url, None))
    with db.session() as session:
        assert session.scalars(select(Job)).all() == []
    db.close()
