"""What the board does, whoever asks (the JSON API or the web pages): accept an upload, show a
submission to those who may see it (as rueval.serve.disclosure publishes it), publish it, and rank
the public ones."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from rueval.core.errors import RuevalError
from rueval.results import RunResult
from rueval.serve import baselines, queue, standings
from rueval.serve.auth import Auth, RateLimited
from rueval.serve.board import TOTAL, Row, public_ranked, reference_rows, sorted_rows, submission_rows
from rueval.serve.db import Database, Submission, Team, Upload
from rueval.serve.disclosure import MIN_N, Disclosure, shown
from rueval.serve.gold import Gold
from rueval.serve.secret import default_secret_file, load_secret
from rueval.serve.store import Store
from rueval.serve.upload import UploadLimits, check_submission

MAX_NAME = 200


@dataclass(frozen=True)
class ServeConfig:
    gold: Path
    store: Path
    db: str  # a SQLAlchemy URL (rueval.serve.db.database_url)
    daily_limit: int = 10  # submissions per team in any 24 hours
    limits: UploadLimits = field(default_factory=UploadLimits)
    secure_cookies: bool = False  # set behind HTTPS: cookies then travel over HTTPS only
    secret_file: Path | None = None  # None: beside the store (rueval.serve.secret)
    min_n: int = MIN_N  # the fewest items a p-value's mark or a subset's score is published for
    trusted_proxies: tuple[str, ...] = ()  # addresses or networks whose X-Forwarded-For is believed
    public_url: str | None = None  # the board's address as its users reach it; None: relative links

    @property
    def secret_path(self) -> Path:
        return self.secret_file or default_secret_file(self.store)


class NotFound(RuevalError):
    pass


@dataclass
class Service:
    config: ServeConfig
    db: Database
    gold: Gold
    store: Store
    auth: Auth
    references: baselines.Baselines

    @classmethod
    def open(cls, config: ServeConfig, gold: Gold | None = None) -> Service:
        """The secret read (made first if missing), the database migrated, the gold read, its
        reference models computed once and stored."""
        secret = load_secret(config.secret_path, config.store)
        db = Database(config.db)
        gold = gold or Gold.load(config.gold)
        return cls(config, db, gold, Store(config.store), Auth(db, secret), baselines.ensure(db, gold))

    @property
    def disclosure(self) -> Disclosure:
        return Disclosure(self.config.min_n)

    def board(self, key: str = TOTAL, descending: bool = True) -> tuple[list[Row], bool]:
        """The public scored submissions as published, ordered by the total or a task's score, and whether their
        tied-with-leader marks are current (else none are shown: a worker is recomputing them)."""
        ranked = public_ranked(self.db)
        public = standings.signature(self.gold, [r.id for r in ranked])
        # read only when of these submissions, and checked again: a worker may store newer ones meanwhile
        stored = (
            standings.load(self.db, self.gold) if standings.stored_signature(self.db, self.gold) == public else None
        )
        current = stored is not None and stored.signature == public
        sizes = {name: len(task.examples) for name, task in self.gold.tasks.items()}
        rows = submission_rows(ranked, self.disclosure, sizes, stored.marks if stored is not None and current else None)
        return sorted_rows(rows, key, descending), current

    def reference_rows(self) -> list[Row]:
        return reference_rows(list(self.gold.tasks), self.references)

    def report(self, id: int) -> Path | None:
        """A scored submission's HTML report, drawn (the first time) from its published run results;
        None before it is scored."""
        folder = self.store.report_dir(id)
        public = folder / "public"
        if not (public / "results.json").is_file():
            if not (folder / "results.json").is_file():
                return None
            self.disclosure.run(RunResult.read(folder)).write(public)
        return self.store.report(public)

    def accept(self, team: Team, data: bytes, name: str, public: bool) -> Submission:
        """Check the zip against the gold, store it, and queue it: the submission row and its job in
        one transaction. A RuevalError (400) for a bad zip, RateLimited (429) over the daily limit."""
        with self.db.session() as session:
            self._check_rate(session, team)  # before the work of reading the zip
        checked = check_submission(data, self.gold, self.config.limits)
        sha256 = self.store.put_upload(data)
        with self.db.session() as session:
            self._check_rate(session, team)  # again, under the team's lock
            insert = pg_insert if self.db.postgresql else sqlite_insert
            session.execute(
                insert(Upload).values(sha256=sha256, size=len(data), created=time.time()).on_conflict_do_nothing()
            )
            name = _clean_name(name) or f"submission of {time.strftime('%Y-%m-%d %H:%M', time.gmtime())}"
            return queue.enqueue(
                session, team, name, public, sha256, self.gold.fingerprint, checked.partial, checked.ignored
            )

    def _check_rate(self, session: Session, team: Team) -> None:
        count, oldest = queue.submissions_today(session, team)
        if count >= self.config.daily_limit:
            oldest = time.time() if oldest is None else oldest  # a limit of 0: none made yet, a day to wait
            wait = max(1, math.ceil(oldest + queue.DAY_S - time.time()))
            raise RateLimited(
                f"{team.name} has made {count} submissions in the last 24 hours, the board's limit; "
                f"the next one can be made in {wait // 3600} h {wait % 3600 // 60} min",
                wait,
            )

    def submission(self, id: int, viewer: Team | None) -> tuple[Submission, Team]:
        """A submission its own team may see, and anyone once it is public; NotFound otherwise (the
        same answer as for an id that does not exist)."""
        with self.db.session(read_only=True) as session:
            submission = session.get(Submission, id)
            if submission is None or not (
                submission.public or (viewer is not None and viewer.id == submission.team_id)
            ):
                raise NotFound(f"no submission {id}")
            return submission, session.get_one(Team, submission.team_id)

    def update(self, id: int, team: Team, public: bool | None = None, name: str | None = None) -> Submission:
        """Publish (or hide) or rename one of the team's own submissions."""
        with self.db.session() as session:
            submission = session.get(Submission, id)
            if submission is None or submission.team_id != team.id:
                raise NotFound(f"no submission {id}")
            if public is not None:
                submission.public = public
            if name is not None:
                submission.name = _clean_name(name) or submission.name
            return submission

    def team_submissions(self, team: Team, everything: bool) -> list[Submission]:
        with self.db.session(read_only=True) as session:
            query = select(Submission).where(Submission.team_id == team.id)
            if not everything:
                query = query.where(Submission.public.is_(True))
            return list(session.scalars(query.order_by(Submission.id.desc())))

    def team_named(self, name: str) -> Team:
        with self.db.session(read_only=True) as session:
            team = session.scalars(select(Team).where(Team.name == name)).first()
        if team is None:
            raise NotFound(f"no team {name!r:.120}")
        return team


def _clean_name(name: str | None) -> str:
    name = "".join(ch for ch in (name or "") if ch.isprintable()).strip()
    return name[:MAX_NAME]


def submission_json(submission: Submission, team: Team | str, disclosure: Disclosure, base_url: str) -> dict[str, Any]:
    """A submission as the API shows it; ``base_url``: the board's public address, or "" for a relative link."""
    return {
        "id": submission.id,
        "name": submission.name,
        "team": team if isinstance(team, str) else team.name,
        "public": submission.public,
        "status": submission.status,
        "created": submission.created,
        "finished": submission.finished,
        "tasks": disclosure.results(submission.results_json()),
        "total": shown(submission.total),
        "partial": submission.partial,
        "ignored": json.loads(submission.ignored),
        "error": submission.error,
        "url": f"{base_url.rstrip('/')}/submissions/{submission.id}",
    }
