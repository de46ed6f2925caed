"""The scoring worker: a separate process (`rueval serve-worker`, or started by `rueval serve`)
that claims queued submissions from the database, scores them against the gold and stores each one's
results (and its run results, from which the web application draws the report). Any number of
workers, on this machine or others sharing the database and the store, run side by side
(rueval.serve.queue). A fault of the storage (rueval.serve.faults: the database locked, the disk
full) gives the job back and the worker tries again, waiting longer each time, instead of stopping
or failing the submission. A worker whose queue is empty brings the board's tied-with-leader marks up
to date (rueval.serve.standings).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from rueval.core.errors import RuevalError
from rueval.serve import baselines, queue, standings
from rueval.serve.board import public_ranked, submission_rows, summary_of
from rueval.serve.db import Database, Submission, Team
from rueval.serve.disclosure import Disclosure
from rueval.serve.faults import Backoff, described, is_storage_fault
from rueval.serve.gold import Gold
from rueval.serve.grading import score_submission
from rueval.serve.logs import configure_logging
from rueval.serve.queue import Claim
from rueval.serve.secret import load_secret
from rueval.serve.standings import Predictions
from rueval.serve.store import Store
from rueval.serve.upload import DEFAULT_LIMITS, UploadLimits, check_submission

log = logging.getLogger("rueval.serve.worker")
POLL_S = 0.5


class Worker:
    def __init__(
        self,
        db: Database,
        gold: Gold,
        store: Store,
        lease_s: float = queue.LEASE_S,
        limits: UploadLimits = DEFAULT_LIMITS,
        parent: int | None = None,
        *,
        secret: bytes,  # the board's (rueval.serve.secret): seeds the bootstrap
    ):
        self.db, self.gold, self.store, self.lease_s, self.limits = db, gold, store, lease_s, limits
        self.secret = secret
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.parent = parent  # started by `rueval serve`: stop when it is gone
        self.references = baselines.ensure(db, gold)
        self.failed_standings = ""  # the public set whose standings failed (a bug's), not tried again

    def run(self, stop: threading.Event | None = None) -> None:
        """Score jobs until ``stop`` is set (or the parent process is gone), polling when idle."""
        stop = stop or threading.Event()
        log.info("worker %s: waiting for submissions", self.name)
        backoff = Backoff()
        while not stop.is_set() and self._parent_alive():
            try:
                scored = self.score_next()
            except Exception as e:
                if not is_storage_fault(e):
                    raise
                delay = backoff.next()
                log.warning("worker %s: %s; trying again in %g s", self.name, described(e), delay)
                stop.wait(delay)
                continue
            backoff.reset()
            if not scored:
                stop.wait(POLL_S)

    def _parent_alive(self) -> bool:
        return self.parent is None or os.getppid() == self.parent

    def score_next(self) -> bool:
        """Claim and score one job; False if the queue was empty (the board's marks then brought up to date)."""
        claim = queue.claim(self.db, self.name, self.lease_s)
        if claim is None:
            self.refresh_standings()
            return False
        done = threading.Event()
        renewing = threading.Thread(target=self._renew, args=(claim, done), daemon=True)
        renewing.start()
        try:
            self._score(claim)
        except Exception as e:
            if is_storage_fault(e):
                queue.release(self.db, claim)  # if the database cannot take even this, the lease runs out
            raise
        finally:
            done.set()
            renewing.join()
        return True

    def refresh_standings(self) -> None:
        """Recompute the tied-with-leader marks if the public scored submissions changed since they were computed."""
        ranked = public_ranked(self.db)
        current = standings.signature(self.gold, [r.id for r in ranked])
        if current in (self.failed_standings, standings.stored_signature(self.db, self.gold)):
            return
        stored = standings.load(self.db, self.gold)  # its p-values serve again where a leader stays
        uploads = {found.id: found.upload for found in ranked}
        rows = submission_rows(ranked, Disclosure(), {})  # the rankings read no marks
        started = time.monotonic()
        try:
            computed = standings.compute(
                self.gold, rows, partial(self._predictions, uploads=uploads), self.secret, stored
            )
        except Exception as e:
            if is_storage_fault(e):
                raise
            # the marks are the board's extra: scoring goes on, and this set is not tried again
            log.exception("worker %s: the board's standings could not be computed", self.name)
            self.failed_standings = current
            return
        standings.store(self.db, self.gold, computed)
        log.info(
            "worker %s: the board's standings of %d submissions in %.1f s",
            self.name,
            len(rows),
            time.monotonic() - started,
        )

    def _predictions(self, id: int, uploads: Mapping[int, str]) -> Predictions | None:
        """A scored submission's predictions, read again from its stored upload; None if it no longer reads (the
        gold changed since, the store lost the file)."""
        try:
            return check_submission(self.store.upload(uploads[id]), self.gold, self.limits).predictions
        except RuevalError as e:
            log.warning("worker %s: submission %s takes no part in the standings: %s", self.name, id, e)
            return None

    def _renew(self, claim: Claim, done: threading.Event) -> None:
        while not done.wait(self.lease_s / 3):
            try:
                if not queue.renew(self.db, claim, self.lease_s):
                    return
            except Exception as e:
                if not is_storage_fault(e):
                    raise
                log.warning("worker %s: the lease was not renewed: %s", self.name, described(e))

    def _score(self, claim: Claim) -> None:
        started = time.process_time()
        with self.db.session(read_only=True) as session:
            submission = session.get_one(Submission, claim.submission)
            team = session.get_one(Team, submission.team_id)
        try:
            checked = check_submission(self.store.upload(submission.upload), self.gold, self.limits)
            label = f"{team.name}: {submission.name}"
            scored = score_submission(self.gold, checked, self.references, label, self.secret)
            self.store.put_results(submission.id, scored.run)
        except Exception as e:
            if is_storage_fault(e):
                raise  # not the submission's fault: the job goes back to the queue
            if isinstance(e, RuevalError):  # the gold changed since the upload was checked, a store that lost the file
                queue.finish(self.db, claim, error=str(e))
                return
            log.exception("worker %s: scoring submission %s failed", self.name, submission.id)
            queue.finish(self.db, claim, error="the board failed to score this submission; its operator has the log")
            return
        summary = summary_of(scored.tasks)
        if queue.finish(self.db, claim, scored.tasks, summary, scored.total):
            log.info(
                "worker %s: scored submission %s in %.2f s of CPU",
                self.name,
                submission.id,
                time.process_time() - started,
            )


def run_worker(
    db_url: str,
    gold_dir: Path,
    store: Path,
    lease_s: float,
    secret_file: Path,
    limits: UploadLimits = DEFAULT_LIMITS,
    parent: int | None = None,
) -> None:
    """`rueval serve-worker`: one worker until interrupted or terminated (it finishes the submission
    it is scoring first)."""
    queue.check_lease(lease_s)  # before the database is opened (and made)
    configure_logging()
    secret = load_secret(secret_file, store, create=False)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    db = Database(db_url)
    try:
        Worker(db, Gold.load(gold_dir), Store(store), lease_s, limits, parent=parent, secret=secret).run(stop)
    except KeyboardInterrupt:
        pass
    finally:
        db.close()
