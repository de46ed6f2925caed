"""The board's tied-with-leader marks: in each of its rankings (the total, each task), the public submissions
its leader does not beat beyond chance.

A ranking's leader is its first row as the board orders it (rueval.serve.board.sorted_rows: the printed
numbers, then age). Every other row with a value there is compared with the leader on the same test items: a
task by its score's paired test (McNemar's exact test where the score is one right-or-wrong metric, else the
paired bootstrap: rueval.scoring.decisions.score_p_value), the total by the paired bootstrap of the total
(rueval.scoring.decisions.total_difference). One ranking's p-values are corrected together by Holm's method; a
row whose corrected p-value is 0.05 or more is tied with the leader. The resamples are seeded by the board's
secret (rueval.serve.secret), so nobody else can redo them.

The marks depend on which submissions are public: a worker recomputes them from the stored uploads when its
queue is empty and that set has changed (rueval.serve.worker), and stores them with a signature of the set.
The board shows them only while that set is still the public one, since a mark computed for another set can
be wrong; rueval.serve.disclosure publishes them only for rankings whose tasks have enough items. A mark is
one bit per ranking and submission; the p-values, discordant counts and items stay with the worker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from rueval.scoring.decisions import score_p_value, tied_with_leader, total_difference
from rueval.scoring.stats import PairedDraws, paired_draws
from rueval.serve.board import TOTAL, Row, sorted_rows
from rueval.serve.db import Database, Standing
from rueval.serve.gold import Gold
from rueval.serve.secret import keyed_digest
from rueval.tasks import Total

LEADER, TIED = "leader", "tied"


@dataclass(frozen=True)
class Standings:
    """Per ranking (TOTAL or a task): its leader's submission id, each other row's p-value against the leader
    (kept in the database, never published) and the ids tied with it; ``signature``: the public submissions
    they were computed for."""

    signature: str
    leaders: Mapping[str, int]
    p_values: Mapping[str, Mapping[int, float]]
    tied: Mapping[str, frozenset[int]] = field(init=False)

    def __post_init__(self) -> None:
        tied = {}
        for ranking, found in self.p_values.items():
            ids, p_values = list(found), list(found.values())
            tied[ranking] = frozenset(id for id, tie in zip(ids, tied_with_leader(p_values), strict=True) if tie)
        object.__setattr__(self, "tied", tied)

    def marks(self, id: int) -> dict[str, str]:
        """The rankings a submission leads or is tied with the leader in: {ranking: LEADER | TIED}."""
        marks = {ranking: TIED for ranking, ids in self.tied.items() if id in ids}
        return marks | {ranking: LEADER for ranking, leader in self.leaders.items() if leader == id}

    def to_json(self) -> str:
        """The leaders and p-values (the signature has a column of its own)."""
        p_values = {ranking: {str(id): p for id, p in found.items()} for ranking, found in self.p_values.items()}
        return json.dumps({"leaders": dict(self.leaders), "p_values": p_values})

    @classmethod
    def from_json(cls, signature: str, text: str) -> Standings:
        found = json.loads(text)
        p_values = {ranking: {int(id): p for id, p in of.items()} for ranking, of in found["p_values"].items()}
        return cls(signature, found["leaders"], p_values)


def signature(gold: Gold, public: Sequence[int]) -> str:
    """The set of public scored submissions (their ids) on this gold."""
    return hashlib.sha256(f"{gold.fingerprint}:{sorted(public)}".encode()).hexdigest()


Predictions = Mapping[str, Sequence[Any]]  # task -> predictions in the order of the gold's test items


def compute(
    gold: Gold,
    rows: Sequence[Row],
    predictions: Callable[[int], Predictions | None],
    secret: bytes,
    previous: Standings | None = None,
) -> Standings:
    """The standings of the board's submission rows (as published). ``predictions`` reads a submission's (None:
    unreadable, and the row takes no part); each row's are read once, and only the leaders' are kept meanwhile.
    A ranking whose leader is ``previous``'s keeps its p-values (the same pair, the same resamples): only new
    rows are compared."""
    ranked = {
        ranking: [row for row in sorted_rows(rows, ranking) if _value(row, ranking) is not None]
        for ranking in (TOTAL, *gold.tasks)
    }
    leaders = {ranking: _id(found[0]) for ranking, found in ranked.items() if found}
    kept = {
        ranking: dict(previous.p_values.get(ranking, {}))
        for ranking, leader in leaders.items()
        if previous is not None and previous.leaders.get(ranking) == leader
    }
    p_values: dict[str, dict[int, float]] = {}
    wanted: dict[str, list[int]] = {}
    for ranking, in_order in ranked.items():
        if ranking in leaders:
            others = [_id(row) for row in in_order[1:]]
            p_values[ranking] = {id: kept[ranking][id] for id in others if id in kept.get(ranking, {})}
            wanted[ranking] = [id for id in others if id not in p_values[ranking]]
    of_leader = {id: predictions(id) for id in {leaders[ranking] for ranking, ids in wanted.items() if ids}}
    for ranking in [ranking for ranking, ids in wanted.items() if ids and of_leader[leaders[ranking]] is None]:
        del leaders[ranking], p_values[ranking], wanted[ranking]  # its leader cannot be read: no marks
    for row in rows:
        id = _id(row)
        joined = [ranking for ranking, ids in wanted.items() if id in ids]
        found = (of_leader[id] if id in of_leader else predictions(id)) if joined else None
        if found is None:
            continue
        pair = _Pair(gold, of_leader, found, id, secret)
        for ranking in joined:
            p_values[ranking][id] = pair.p_value(ranking, leaders[ranking])
    return Standings(signature(gold, [_id(row) for row in rows]), leaders, p_values)


@dataclass
class _Pair:
    """One submission against the leaders it is compared with, each task's paired draws made once per leader."""

    gold: Gold
    leaders: Mapping[int, Predictions | None]
    predictions: Predictions
    id: int
    secret: bytes
    draws: dict[tuple[str, int], PairedDraws] = field(default_factory=dict)

    def p_value(self, ranking: str, leader: int) -> float:
        if ranking == TOTAL:
            both = [(self.gold.tasks[task].task, self._draws(task, leader)) for task in self.gold.tasks]
            return total_difference(Total(tuple(self.gold.tasks)), both).p_value
        gold_task = self.gold.tasks[ranking]
        return score_p_value(
            gold_task.task, gold_task.examples, *self._both(ranking, leader), self._draws(ranking, leader)
        )

    def _both(self, task: str, leader: int) -> tuple[Sequence[Any], Sequence[Any]]:
        of_leader = self.leaders[leader]
        assert of_leader is not None  # a leader whose predictions cannot be read leads no ranking
        return of_leader[task], self.predictions[task]

    def _draws(self, task: str, leader: int) -> PairedDraws:
        if (task, leader) not in self.draws:
            seed = int.from_bytes(keyed_digest(self.secret, "standings", str(leader).encode(), str(self.id).encode()))
            gold_task = self.gold.tasks[task]
            self.draws[task, leader] = paired_draws(
                gold_task.task, gold_task.examples, *self._both(task, leader), seed=seed
            )
        return self.draws[task, leader]


def _value(row: Row, ranking: str) -> float | None:
    return row.total if ranking == TOTAL else row.tasks.get(ranking)


def _id(row: Row) -> int:
    assert row.id is not None  # a submission's row
    return row.id


def stored_signature(db: Database, gold: Gold) -> str | None:
    """The public submissions the stored standings of this gold were computed for (their signature alone: an idle
    worker asks for it at every poll, the board at every request)."""
    with db.session(read_only=True) as session:
        return session.scalar(select(Standing.signature).where(Standing.gold == gold.fingerprint))


def load(db: Database, gold: Gold) -> Standings | None:
    """The last standings a worker stored for this gold."""
    with db.session(read_only=True) as session:
        stored = session.get(Standing, gold.fingerprint)
        return None if stored is None else Standings.from_json(stored.signature, stored.standings)


def store(db: Database, gold: Gold, standings: Standings) -> None:
    """Keep the standings (two workers storing at once store the same)."""
    insert = pg_insert if db.postgresql else sqlite_insert
    text = standings.to_json()
    with db.session() as session:
        session.execute(
            insert(Standing)
            .values(gold=gold.fingerprint, signature=standings.signature, standings=text)
            .on_conflict_do_update(index_elements=["gold"], set_={"signature": standings.signature, "standings": text})
        )
