"""API tokens against `rueval serve` in a process of its own, on SQLite and on PostgreSQL: wrong
tokens are limited per client address and a right one is never refused; X-Forwarded-For counts
only from a proxy the board trusts; a token of an earlier rueval (argon2, schema 0001) is taken
once and rewritten to its keyed hash."""

import time

import httpx
import pytest
from alembic import command
from alembic.config import Config
from board_support import Server, bearer, head_revision
from sqlalchemy import text

from rueval.serve.auth import LEGACY_HASHER, token_digest
from rueval.serve.db import MIGRATIONS, database_url, open_database
from rueval.serve.secret import default_secret_file, load_secret

pytestmark = pytest.mark.slow
FAILURES = 10  # rueval.serve.auth.FailureLimit's default


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path) -> str | None:
    """--db for the test: None (SQLite in the store) or a PostgreSQL database of its own."""
    if request.param == "sqlite":
        return None
    postgres = request.getfixturevalue("postgres")
    return postgres.create_database(f"tokens{abs(hash(request.node.name)) % 10**8}")


def add_team(cli, store, db, name: str) -> str:
    result = cli("serve-admin", "add-team", name, "--store", store, *(["--db", db] if db else []))
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def wrong(token: str) -> str:
    return token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")


def test_wrong_tokens_are_limited_per_forwarded_address_and_a_right_one_always_passes(
    cli, gold_dir, tmp_path, servers, database
):
    store = tmp_path / "store"
    token = add_team(cli, store, database, "alpha")
    server = Server(gold_dir, store, database, "--workers", "0", "--trusted-proxy", "127.0.0.1")
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=30) as client:

        def ask(token: str, address: str) -> httpx.Response:
            return client.get("/api/submissions/1", headers={**bearer(token), "x-forwarded-for": address})

        started = time.monotonic()
        assert [ask(wrong(token), "203.0.113.5").status_code for _ in range(FAILURES)] == [401] * FAILURES
        assert time.monotonic() - started < 10  # no argon2: each wrong token costs a lookup
        limited = ask(wrong(token), "203.0.113.5")
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert "too many wrong tokens from 203.0.113.5" in limited.json()["error"]
        for _ in range(3):  # the right token from the limited address: never refused
            assert ask(token, "203.0.113.5").json() == {"error": "no submission 1"}
        assert ask(wrong(token), "203.0.113.6").status_code == 401  # another client is not limited
        assert client.get("/").status_code == 200
    assert "Traceback" not in server.read_log()


def test_a_forwarded_address_from_an_untrusted_peer_is_ignored(cli, gold_dir, tmp_path, servers):
    store = tmp_path / "store"
    token = add_team(cli, store, None, "alpha")
    server = Server(gold_dir, store, None, "--workers", "0")  # no --trusted-proxy
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answers = [
            client.get("/api/submissions/1", headers={**bearer(wrong(token)), "x-forwarded-for": f"198.51.100.{i}"})
            for i in range(FAILURES + 1)
        ]
        assert [answer.status_code for answer in answers] == [401] * FAILURES + [429]
        assert "from 127.0.0.1" in answers[-1].json()["error"]  # the connection's address, not the header's
        assert client.get("/api/submissions/1", headers=bearer(token)).status_code == 404  # right: taken


def test_a_token_of_an_earlier_rueval_is_taken_once_with_argon2_then_by_its_keyed_hash(
    cli, gold_dir, tmp_path, servers, database
):
    store = tmp_path / "store"
    url = database_url(database, store)
    engine = open_database(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:  # the schema and a token as an earlier rueval left them
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(text("insert into teams (id, name, created) values (1, 'old', 0)"))
        token = "rueval_0123456789abcdef_" + "s" * 43
        connection.execute(
            text("insert into tokens (team_id, key, hash, created) values (1, '0123456789abcdef', :hash, 0)"),
            {"hash": LEGACY_HASHER.hash(token)},
        )
    engine.dispose()
    server = Server(gold_dir, store, database, "--workers", "0")  # migrates to the keyed hashes
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/api/submissions/1", headers=bearer(wrong(token))).status_code == 401
        for _ in range(2):
            assert client.get("/api/submissions/1", headers=bearer(token)).json() == {"error": "no submission 1"}
    secret = load_secret(default_secret_file(store), store, create=False)
    engine = open_database(url)
    with engine.connect() as connection:
        row = connection.execute(text("select key, hash, digest from tokens")).one()
        version = connection.execute(text("select version_num from alembic_version")).scalar()
    engine.dispose()
    assert tuple(row) == (None, None, token_digest(secret, token)) and version == head_revision()
