"""Fixtures of the leaderboard service's tests: the gold, zips as `rueval submit` writes them, the
service in-process, started servers and a PostgreSQL cluster (helpers in board_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import require, require_modules

require_modules("fastapi", "uvicorn", "sqlalchemy", "alembic", "argon2", "multipart", "psycopg", extra="serve")

from board_support import POSTGRES_BIN, Postgres, Server, write_gold

from rueval.serve.app import create_app
from rueval.serve.auth import add_team
from rueval.serve.db import database_url
from rueval.serve.gold import Gold
from rueval.serve.service import ServeConfig, Service
from rueval.serve.worker import Worker


@pytest.fixture(scope="session")
def gold_dir(tmp_path_factory) -> Path:
    return write_gold(tmp_path_factory.mktemp("gold"))


@pytest.fixture(scope="session")
def gold(gold_dir) -> Gold:
    return Gold.load(gold_dir)


@pytest.fixture(scope="session")
def submission_zip(gold_dir, tmp_path_factory):
    """The zip `rueval submit -m MODEL --data GOLD` writes, as bytes (made once per model)."""
    from rueval.run.spec import RunSpec
    from rueval.run.submission import write_submission

    made: dict[str, bytes] = {}

    def make(model: str = "heuristic") -> bytes:
        if model not in made:
            out = tmp_path_factory.mktemp("zips") / f"{model}.zip"
            write_submission(RunSpec.create("rsg", model, {}, data=str(gold_dir)), out)
            made[model] = out.read_bytes()
        return made[model]

    return make


@pytest.fixture
def service(gold_dir, gold, tmp_path) -> Iterator[Service]:
    store = tmp_path / "store"
    # min_n=20: the marks are published on the samples' 20-item tasks (the default asks for 100)
    config = ServeConfig(gold_dir, store, database_url(None, store), daily_limit=5, min_n=20)
    opened = Service.open(config, gold)
    yield opened
    opened.db.close()


@pytest.fixture
def tokens(service) -> dict[str, str]:
    return {name: add_team(service.db, name, service.auth.secret) for name in ("alpha", "beta")}


@pytest.fixture
def client(service):
    from fastapi.testclient import TestClient

    with TestClient(create_app(service), base_url="http://board.test") as test_client:
        yield test_client


@pytest.fixture
def worker(service, gold) -> Worker:
    return Worker(service.db, gold, service.store, lease_s=5, secret=service.auth.secret)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Started servers, each stopped after the test (the test appends them)."""
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    require(bool(POSTGRES_BIN), "needs PostgreSQL's server: apt-get install -y postgresql (.ci/run installs it)")
    cluster = Postgres(POSTGRES_BIN[-1])
    yield cluster
    cluster.stop()
