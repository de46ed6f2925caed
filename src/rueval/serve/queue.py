"""The scoring queue, in the database: a submission row and its job are written in one transaction,
so an accepted upload is never lost, and a job is claimed under a lease that its worker renews.

A worker that dies (killed, its machine gone) stops renewing: once the lease has run out the job is
claimed again, by any worker, so a server killed while scoring resumes the job when it restarts.
On PostgreSQL workers on several machines claim with SELECT ... FOR UPDATE SKIP LOCKED, each taking
a different job without waiting on the others; on SQLite the write lock (BEGIN IMMEDIATE)
serialises the claims. A job that stopped its worker MAX_ATTEMPTS times fails instead of taking
every worker down in turn; one its worker could not store (rueval.serve.faults) is given back
without counting an attempt.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, or_, select, update
from sqlalchemy.orm import Session

from rueval.core.errors import RuevalError
from rueval.serve.db import Database, Job, Submission, Team

LEASE_S = 30.0  # a claimed job is the worker's for this long, renewed every third of it
MAX_ATTEMPTS = 3
DAY_S = 24 * 3600


def check_lease(lease_s: float) -> None:
    """A lease runs out: an endless one would keep a dead worker's job from every other worker."""
    if isinstance(lease_s, bool) or not isinstance(lease_s, int | float) or not 1 <= lease_s < math.inf:
        raise RuevalError(f"--lease {lease_s}: expected a finite number of seconds, at least 1")


@dataclass(frozen=True)
class Claim:
    job: int
    submission: int
    worker: str


def enqueue(
    session: Session,
    team: Team,
    name: str,
    public: bool,
    upload: str,
    gold: str,
    partial: bool,
    ignored: Sequence[str],
) -> Submission:
    """A queued submission and its job, in the caller's transaction."""
    submission = Submission(
        team_id=team.id,
        name=name,
        public=public,
        status="queued",
        upload=upload,
        gold=gold,
        created=time.time(),
        partial=partial,
        ignored=json.dumps(list(ignored)),
    )
    session.add(submission)
    session.flush()  # its id, for the job
    session.add(Job(submission_id=submission.id, attempts=0))
    return submission


def submissions_today(session: Session, team: Team) -> tuple[int, float | None]:
    """How many submissions the team made in the last 24 hours, and when the oldest of them was made.
    On PostgreSQL the team's row is locked first, so two uploads at once cannot both pass the limit."""
    session.execute(select(Team.id).where(Team.id == team.id).with_for_update())
    since = time.time() - DAY_S
    count, oldest = session.execute(
        select(func.count(Submission.id), func.min(Submission.created)).where(
            Submission.team_id == team.id, Submission.created > since
        )
    ).one()
    return count, oldest


def claim(db: Database, worker: str, lease_s: float = LEASE_S) -> Claim | None:
    """The oldest job that is waiting or whose lease ran out, now leased to ``worker``; None if none."""
    while True:
        with db.session() as session:
            now = time.time()
            job = session.scalars(
                select(Job)
                .where(or_(Job.lease_until.is_(None), Job.lease_until < now))
                .order_by(Job.id)
                .limit(1)
                .with_for_update(skip_locked=True)
            ).first()
            if job is None:
                return None
            submission = session.get_one(Submission, job.submission_id)
            if job.attempts >= MAX_ATTEMPTS:
                submission.status, submission.finished = "failed", now
                submission.error = f"scoring stopped {job.attempts} times without finishing; ask the board's operator"
                session.delete(job)
                continue
            job.attempts += 1
            job.lease_until, job.worker = now + lease_s, worker
            submission.status = "scoring"
            return Claim(job.id, job.submission_id, worker)


def renew(db: Database, claim: Claim, lease_s: float = LEASE_S) -> bool:
    """Extend the claim's lease; False if the job is no longer this worker's."""
    with db.session() as session:
        result = session.execute(  # DML: a CursorResult, which counts the rows it changed
            update(Job).where(Job.id == claim.job, Job.worker == claim.worker).values(lease_until=time.time() + lease_s)
        )
        return cast(CursorResult[Any], result).rowcount == 1


def release(db: Database, claim: Claim) -> None:
    """Give a claimed job back to the queue as it was before the claim: not the job but the storage
    failed (rueval.serve.faults), so the attempt does not count."""
    with db.session() as session:
        given = session.execute(
            update(Job)
            .where(Job.id == claim.job, Job.worker == claim.worker)
            .values(lease_until=None, worker=None, attempts=Job.attempts - 1)
        )
        if cast(CursorResult[Any], given).rowcount == 1:  # DML: a CursorResult
            session.get_one(Submission, claim.submission).status = "queued"


def finish(
    db: Database,
    claim: Claim,
    results: dict[str, Any] | None = None,
    summary: dict[str, Any] | None = None,
    total: float | None = None,
    error: str | None = None,
) -> bool:
    """Record a claimed job's outcome and take it off the queue, in one transaction; False (and
    nothing written) if the lease ran out and another worker has the job now."""
    with db.session() as session:
        taken = session.execute(delete(Job).where(Job.id == claim.job, Job.worker == claim.worker))
        if cast(CursorResult[Any], taken).rowcount != 1:  # DML: a CursorResult
            return False
        submission = session.get_one(Submission, claim.submission)
        submission.status = "failed" if error else "done"
        submission.finished = time.time()
        submission.results = None if results is None else json.dumps(results)
        submission.summary = None if summary is None else json.dumps(summary)
        submission.total, submission.error = total, error
        return True
