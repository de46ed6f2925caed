"""The board's database: its tables, the connection to SQLite or PostgreSQL, and the migrations.

SQLite (the default, a file in the store) and PostgreSQL (psycopg 3) run the same schema, made and
changed only by the Alembic migrations in ``serve/migrations``; a test checks that the migrations
give exactly these tables. Times are seconds since the epoch (floats), the same on both.

SQLite serialises writers: a transaction that writes begins IMMEDIATE (it takes the write lock at
once and waits for it, rather than failing halfway through). A read-only one (``session(read_only=
True)``: the pages, the GET API) begins DEFERRED on a connection that cannot write (``PRAGMA
query_only``), so it never takes nor waits for the write lock: in WAL mode it reads the last commit
while another process holds the lock. On PostgreSQL it is a READ ONLY transaction. PostgreSQL
claims jobs with SELECT ... FOR UPDATE SKIP LOCKED (rueval.serve.queue).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Integer, LargeBinary, String, Text, UniqueConstraint, create_engine
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from rueval.core.errors import RuevalError

MIGRATIONS = Path(__file__).parent / "migrations"
SQLITE_FILE = "board.sqlite3"
SQLITE_WAIT_S = 30  # how long a writer waits for SQLite's lock


class Base(DeclarativeBase):
    pass


class Team(Base):
    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created: Mapped[float] = mapped_column(Float)


class Token(Base):
    """A team's API token: its keyed hash (rueval.serve.auth) finds the row. A token of an earlier
    rueval has a public key and an argon2 hash instead, until its first check rewrites it."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    digest: Mapped[str | None] = mapped_column(String(64), unique=True, index=True, nullable=True)
    key: Mapped[str | None] = mapped_column(String(40), unique=True, nullable=True)
    hash: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created: Mapped[float] = mapped_column(Float)


class SignIn(Base):
    """A browser session: the SHA-256 of the cookie's secret (never the secret), and the form token."""

    __tablename__ = "sign_ins"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    csrf: Mapped[str] = mapped_column(String(64))
    expires: Mapped[float] = mapped_column(Float)


class Upload(Base):
    """An uploaded zip, stored once under the store by its SHA-256 (rueval.serve.store)."""

    __tablename__ = "uploads"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    created: Mapped[float] = mapped_column(Float)


class Submission(Base):
    """One upload of one team, from queued to scored. ``results``: per task its scores, intervals and
    honest-board columns (JSON); ``summary``: the little of it the board shows, so that a board of
    thousands reads little; ``ignored``: the zip's tasks the gold has no answers for."""

    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    public: Mapped[bool] = mapped_column(Boolean, index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)  # queued | scoring | done | failed
    upload: Mapped[str] = mapped_column(ForeignKey("uploads.sha256"))
    gold: Mapped[str] = mapped_column(String(64))  # the gold's fingerprint it was checked against
    created: Mapped[float] = mapped_column(Float, index=True)
    finished: Mapped[float | None] = mapped_column(Float, nullable=True)
    total: Mapped[float | None] = mapped_column(Float, nullable=True)
    partial: Mapped[bool] = mapped_column(Boolean)
    results: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)  # the board's cells (rueval.serve.board)
    ignored: Mapped[str] = mapped_column(Text, default="[]")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)

    def results_json(self) -> dict[str, Any]:
        return json.loads(self.results) if self.results else {}


class Job(Base):
    """A submission waiting to be scored, or being scored while ``lease_until`` is ahead (its worker
    renews it); a lease that ran out belongs to a worker that died, and the job is claimed again."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), unique=True)
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True, index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)


class Reference(Base):
    """A reference model's predictions on the gold's test set of one task (majority, heuristic, and
    the heuristics' rules alone: null where none fires), computed once per gold."""

    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("gold", "name", "task"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    gold: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(40))
    task: Mapped[str] = mapped_column(String(40))
    predictions: Mapped[bytes] = mapped_column(LargeBinary)  # JSON, UTF-8
    metrics: Mapped[str] = mapped_column(Text)  # JSON: the task's metrics, x100 ({} for the rules)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)


class Standing(Base):
    """The board's tied-with-leader marks on one gold (rueval.serve.standings), as a worker last computed them."""

    __tablename__ = "standings"
    gold: Mapped[str] = mapped_column(String(64), primary_key=True)
    signature: Mapped[str] = mapped_column(String(64))  # the public submissions they were computed for
    standings: Mapped[str] = mapped_column(Text)  # JSON: Standings.to_json


def database_url(db: str | None, store: Path) -> str:
    """--db as given (postgresql:// runs on psycopg 3), or SQLite in the store."""
    if db is None:
        return f"sqlite:///{(store / SQLITE_FILE).resolve()}"
    try:
        url = make_url(db)
    except ArgumentError:
        raise RuevalError(
            f"--db {db}: not a database URL (expected postgresql://USER@HOST/NAME or sqlite:///FILE)"
        ) from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise RuevalError(f"--db {db}: expected a postgresql:// or sqlite:/// URL")
    return url.render_as_string(hide_password=False)


def open_database(url: str, read_only: bool = False) -> Engine:
    """An engine for the URL, SQLite set up for concurrent use (see the module's docstring); on SQLite,
    ``read_only``: one whose connections cannot write and whose transactions take no lock."""
    if make_url(url).get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    path = make_url(url).database
    if path:
        folder = Path(path).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a file in the way (--store FILE), no permission, a name too long
            why = "a file, not a folder" if folder.is_file() else e.strerror or str(e)
            raise RuevalError(f"{folder}: cannot hold the board's database ({why})") from None
    engine = create_engine(
        url, connect_args={"timeout": SQLITE_WAIT_S, "isolation_level": None, "check_same_thread": False}
    )

    @sa_event.listens_for(engine, "connect")
    def _configure(connection: Any, _record: Any) -> None:  # the DB-API connection
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_WAIT_S * 1000}")
        if read_only:
            cursor.execute("PRAGMA query_only=ON")
        cursor.close()

    @sa_event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


def migrate(engine: Engine) -> None:
    """Bring the database's schema to the newest migration (a new database gets every table)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except OperationalError as e:
        raise RuevalError(f"database {engine.url.render_as_string()}: {_first_line(e.orig or e)}") from None


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class Database:
    """The board's database, migrated, with its sessions."""

    def __init__(self, url: str):
        self.url = url
        self.engine = open_database(url)
        migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.reader = (
            self.engine.execution_options(postgresql_readonly=True)
            if self.postgresql
            else open_database(url, read_only=True)
        )
        self._read_sessions = sessionmaker(self.reader, expire_on_commit=False)

    @property
    def postgresql(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @contextmanager
    def session(self, read_only: bool = False) -> Iterator[Session]:
        """One transaction: committed if the block finishes, rolled back if it raises. ``read_only``:
        one that reads only (a write in it fails), and never waits for a writer."""
        with (self._read_sessions if read_only else self._sessions)() as session, session.begin():
            yield session

    def close(self) -> None:
        self.reader.dispose()
        self.engine.dispose()
