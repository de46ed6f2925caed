"""The leaderboard service's commands: serve, serve-worker, serve-admin (the serve extra)."""

from __future__ import annotations

import importlib.util
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import typer

from rueval.cli.app import WholeHelp, app
from rueval.cli.option_types import console, megabytes, user_errors
from rueval.core.errors import RuevalError
from rueval.serve.disclosure import MIN_N

if TYPE_CHECKING:
    from rueval.serve.client import BoardClient

GoldOption = Annotated[
    Path,
    typer.Option("--gold", help="The private gold: RSG task folders with train and test files, test with answers."),
]
DbOption = Annotated[
    str | None,
    typer.Option("--db", help="The database: postgresql://USER@HOST/NAME (default: SQLite in --store)."),
]
StoreOption = Annotated[
    Path, typer.Option("--store", help="The board's folder: uploads, reports, the SQLite database.")
]
SecretOption = Annotated[
    Path | None,
    typer.Option(
        "--secret-file",
        help="The board's secret (256 random bits; made, owner-only, if missing): seeds the bootstrap and "
        "keys the token hashes. Outside --store; the same file for every process of the board "
        "(default: STORE.secret beside the store).",
    ),
]
LeaseOption = Annotated[
    float,
    typer.Option(
        "--lease", min=1.0, help="Seconds a worker holds a job without renewing it before another may take it."
    ),
]


def _needs_serve_extra() -> None:
    missing = [
        name
        for name in ("fastapi", "uvicorn", "sqlalchemy", "alembic", "argon2", "disarm")
        if not importlib.util.find_spec(name)
    ]
    if missing:
        raise RuevalError(f"the leaderboard needs {', '.join(missing)}: pip install -e '.[serve]'")


MaxUploadOption = Annotated[float, typer.Option(min=0.01, help="The largest zip accepted, in MiB.")]


@app.command()
@user_errors
def serve(
    gold: GoldOption,
    db: DbOption = None,
    store: StoreOption = Path("board"),
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="The port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=0, help="Scoring workers to start beside the server.")] = 1,
    daily_limit: Annotated[int, typer.Option(min=1, help="Submissions a team may make in any 24 hours.")] = 10,
    max_upload_mb: MaxUploadOption = 20.0,
    lease: LeaseOption = 30.0,
    secure_cookies: Annotated[
        bool, typer.Option(help="Behind HTTPS: send the sign-in cookies over HTTPS only.")
    ] = False,
    secret_file: SecretOption = None,
    min_n: Annotated[
        int,
        typer.Option(
            "--min-n",
            min=1,
            help="The fewest test items a task's ≈M/≈H marks, or a subset's score (where no rule fires, slices, "
            "LiDiRus features), are published for.",
        ),
    ] = MIN_N,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-proxy",
            help="A proxy's address or network (repeatable) whose X-Forwarded-For gives the client's address "
            "(default: none; the connection's address counts).",
        ),
    ] = None,
    public_url: Annotated[
        str | None,
        typer.Option(
            "--public-url",
            help="The board's address as its users reach it, for the API's links (default: relative links).",
        ),
    ] = None,
    max_connections: Annotated[
        int, typer.Option(min=1, help="Connections open at once; beyond: 503 and closed (at most ulimit -Hn - 100).")
    ] = 500,
    max_connections_per_address: Annotated[
        int,
        typer.Option(
            min=0, help="Connections open at once from one client address (0: no cap; a --trusted-proxy's: no cap)."
        ),
    ] = 50,
    read_timeout: Annotated[
        float,
        typer.Option(min=0.1, help="Seconds a request's headers, or a piece of its body, may take to arrive."),
    ] = 30.0,
) -> None:
    """Serve the leaderboard: teams upload `rueval submit` zips, workers score them against the gold."""
    _needs_serve_extra()
    from rueval.serve.connections import ConnectionLimits
    from rueval.serve.db import database_url
    from rueval.serve.server import run_server
    from rueval.serve.service import ServeConfig
    from rueval.serve.upload import UploadLimits

    limits = UploadLimits(upload_bytes=megabytes(max_upload_mb, "--max-upload-mb"))
    config = ServeConfig(
        gold,
        store,
        database_url(db, store),
        daily_limit,
        limits,
        secure_cookies,
        secret_file,
        min_n,
        _proxies(trusted_proxy or []),
        _public_url(public_url),
    )
    connections = ConnectionLimits(max_connections, max_connections_per_address, read_timeout, config.trusted_proxies)
    run_server(config, host, port, workers, lease, connections)


def _proxies(given: list[str]) -> tuple[str, ...]:
    for proxy in given:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise RuevalError(f"--trusted-proxy {proxy}: expected an IP address or network (10.0.0.0/8)") from None
    return tuple(given)


def _public_url(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise RuevalError(f"--public-url {url}: expected the board's http:// or https:// address")
    return url.rstrip("/")


@app.command("serve-worker")
@user_errors
def serve_worker(
    gold: GoldOption,
    db: DbOption = None,
    store: StoreOption = Path("board"),
    lease: LeaseOption = 30.0,
    secret_file: SecretOption = None,
    max_upload_mb: MaxUploadOption = 20.0,
    parent: Annotated[int | None, typer.Option(hidden=True, help="Stop when this process is gone.")] = None,
) -> None:
    """Score queued submissions (more workers for a board: the same --db, --store, --secret-file and
    --max-upload-mb, on any machine)."""
    _needs_serve_extra()
    from rueval.serve.db import database_url
    from rueval.serve.secret import default_secret_file
    from rueval.serve.upload import UploadLimits
    from rueval.serve.worker import run_worker

    limits = UploadLimits(upload_bytes=megabytes(max_upload_mb, "--max-upload-mb"))
    secret = secret_file or default_secret_file(store)
    run_worker(database_url(db, store), gold, store, lease, secret, limits, parent)


admin = typer.Typer(cls=WholeHelp, help="Manage the leaderboard's teams.", no_args_is_help=True)
app.add_typer(admin, name="serve-admin")


@admin.command("add-team")
@user_errors
def add_team(
    name: Annotated[str, typer.Argument(help="The team's name, as the board shows it.")],
    db: DbOption = None,
    store: StoreOption = Path("board"),
    secret_file: SecretOption = None,
) -> None:
    """Add a team and print its API token (shown once: only its keyed hash is stored)."""
    _needs_serve_extra()
    from rueval.serve.auth import add_team as add
    from rueval.serve.db import Database, database_url
    from rueval.serve.secret import default_secret_file, load_secret

    secret = load_secret(secret_file or default_secret_file(store), store)
    database = Database(database_url(db, store))
    try:
        token = add(database, name, secret)
    finally:
        database.close()
    console.print(f"team {name!r} added; its token (shown once, keep it):", highlight=False)
    print(token)


# rueval submit --to: the board's address, the team's token, the submission's name and visibility
BoardUrlOption = Annotated[
    str | None,
    typer.Option("--to", help="Upload the zip to a board (`rueval serve`) at this address and wait for its score."),
]
BoardTokenOption = Annotated[
    str | None, typer.Option("--token", envvar="RUEVAL_TOKEN", help="--to: the team's token (or RUEVAL_TOKEN).")
]
SubmissionNameOption = Annotated[str, typer.Option("--name", help="--to: the submission's name on the board.")]
PublicOption = Annotated[
    bool, typer.Option("--public", help="--to: show it on the board once scored (default: private to the team).")
]


def board_client(to: str | None, token: str | None) -> BoardClient | None:
    if to is None:
        return None
    from rueval.serve.client import BoardClient

    return BoardClient(to, token or "")


def upload_and_wait(board: BoardClient, zip_path: Path, name: str, public: bool) -> None:
    """Upload the zip, show its status until it is scored, then its id, address and scores."""
    uploaded = board.upload(zip_path, name, public)
    console.print(f"uploaded as submission {uploaded['id']}: {board.link(uploaded['url'])}", highlight=False)
    with console.status("queued") as status:
        found = board.wait(uploaded["id"], lambda s: status.update(f"submission {s['id']}: {s['status']}"))
    if found["status"] == "failed":
        raise RuevalError(f"{board.link(found['url'])}: scoring failed: {found['error']}")
    console.print(_scores_line(found), highlight=False)


def _scores_line(found: dict[str, Any]) -> str:
    scores = ", ".join(f"{task} {entry['score']:.1f}" for task, entry in found["tasks"].items())
    total = "partial (no total)" if found["total"] is None else f"total {found['total']:.1f}"
    ignored = f"; ignored (no gold): {', '.join(found['ignored'])}" if found["ignored"] else ""
    return f"submission {found['id']} scored: {total}; {scores}{ignored}"
