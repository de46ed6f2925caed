"""The leaderboard: the public scored submissions, best first, and the reference rows set apart:
the reference models computed by rueval on this gold (majority, heuristics) and the papers' rows
(RSG Table 2, the heuristics paper's Table 8, scored on the official test set).

A submission's cells are its task scores; a cell whose score the paired bootstrap cannot tell from
the majority class's or the heuristics' on the same items carries that mark (rueval.serve.grading), and
a cell whose ranking's leader does not beat it beyond chance the tied-with-leader mark
(rueval.serve.standings). Every number is as the board prints it, and marks only on tasks of enough
items (rueval.serve.disclosure); rows are ranked on the printed numbers, so equal ones keep their age order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, NamedTuple

from sqlalchemy import select

from rueval.report.reference import references
from rueval.serve.baselines import HEURISTIC, MAJORITY, TITLES, Baselines
from rueval.serve.db import Database, Submission, Team
from rueval.serve.disclosure import Disclosure, shown
from rueval.tasks import RSG

TOTAL = "total"  # the ranking by the total; the others are by a task's score


class Ranked(NamedTuple):
    """A public scored submission as the board reads it from the database."""

    id: int
    name: str
    team: str
    total: float | None
    partial: bool
    summary: str | None  # JSON, summary_of
    upload: str  # its zip's SHA-256 in the store (rueval.serve.store), never shown


@dataclass(frozen=True)
class Row:
    """One row of the board: a submission, or a reference row (``kind``: computed | human | baseline | model)."""

    name: str
    kind: str
    tasks: Mapping[str, float]
    total: float | None
    team: str | None = None
    id: int | None = None
    partial: bool = False
    source: str = ""
    alike: Mapping[str, Sequence[str]] = field(default_factory=dict)  # task -> baselines it cannot be told from
    standing: Mapping[str, str] = field(default_factory=dict)  # ranking -> "leader" | "tied" (rueval.serve.standings)

    def to_json(self) -> dict[str, Any]:
        if self.id is not None:
            return {
                "team": self.team,
                "name": self.name,
                "id": self.id,
                "total": self.total,
                "partial": self.partial,
                "tasks": dict(self.tasks),
                "not_distinguishable_from": {task: list(models) for task, models in self.alike.items() if models},
                "standing": dict(self.standing),
            }
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source,
            "total": self.total,
            "tasks": dict(self.tasks),
        }

    def cells(self, tasks: Sequence[str]) -> list[tuple[str, str, str]]:
        """The row's task cells as the page shows them: the score to one decimal ("–" where there is
        none), the initials of the baselines it cannot be told from ("MH", "M", ""), and its standing in
        the task's ranking ("leader", "tied", "")."""
        shown = []
        for task in tasks:
            score = self.tasks.get(task)
            mark = "".join(model[0].upper() for model in self.alike.get(task, ()))
            shown.append(("–" if score is None else f"{score:.1f}", mark, self.standing.get(task, "")))
        return shown


def summary_of(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What the board keeps of a scored submission's results: each task's score, and the baselines
    its score cannot be told from."""
    return {
        "tasks": {name: entry["score"] for name, entry in tasks.items()},
        "alike": {
            name: [model for model, test in entry["versus"].items() if not test["distinguishable"]]
            for name, entry in tasks.items()
        },
    }


def public_ranked(db: Database) -> list[Ranked]:
    """The public scored submissions, oldest first (sorted_rows ranks them on the printed numbers). Only
    the columns the board needs are read (not the full results), as plain rows: a board of thousands reads
    little."""
    with db.session(read_only=True) as session:
        rows = session.execute(
            select(
                Submission.id,
                Submission.name,
                Team.name,
                Submission.total,
                Submission.partial,
                Submission.summary,
                Submission.upload,
            )
            .join(Team, Team.id == Submission.team_id)
            .where(Submission.public.is_(True), Submission.status == "done")
            .order_by(Submission.id)
        ).all()
    return [Ranked(*row) for row in rows]


def submission_rows(
    ranked: Sequence[Ranked],
    disclosure: Disclosure,
    sizes: Mapping[str, int],
    standing: Callable[[int], Mapping[str, str]] | None = None,
) -> list[Row]:
    """The submissions' rows as published; ``sizes``: the gold's items per task; ``standing``: a submission's
    tied-with-leader marks by ranking (rueval.serve.standings.Standings.marks)."""
    rows = []
    for found in ranked:
        summary = json.loads(found.summary or "{}")
        tasks = {task: shown(score) for task, score in summary.get("tasks", {}).items()}
        alike = disclosure.alike(summary.get("alike", {}), sizes)
        marks = {
            ranking: mark
            for ranking, mark in (standing(found.id) if standing else {}).items()
            if disclosure.marked(list(sizes) if ranking == TOTAL else [ranking], sizes)
        }
        total = shown(found.total)
        rows.append(Row(found.name, "submission", tasks, total, found.team, found.id, found.partial, "", alike, marks))
    return rows


def reference_rows(tasks: Sequence[str], computed: Baselines) -> list[Row]:
    """The reference models computed on this gold, then the papers' RSG rows (as printed; their
    total is the paper's own)."""
    rows = []
    for model in (MAJORITY, HEURISTIC):
        scores = {task: score for task in tasks if (score := computed[model][task].score) is not None}
        total = shown(fmean(scores.values())) if len(scores) == len(tasks) else None
        shown_scores = {task: shown(score) for task, score in scores.items()}
        rows.append(Row(TITLES[model], "computed", shown_scores, total, source="rueval on this gold"))
    for paper in references(RSG):
        printed = {task: shown(score) for task in tasks if (score := paper.task_score(task)) is not None}
        reported = paper.reported_total()
        rows.append(Row(paper.name, paper.kind, printed, shown(reported[0]) if reported else None, source=paper.source))
    return rows


def sorted_rows(rows: Sequence[Row], key: str, descending: bool = True) -> list[Row]:
    """Rows ordered by the total or a task's score; rows without the value last, partial ones after
    complete ones when ordering by the total. The order among equals is kept (best first, then oldest)."""

    def value(row: Row) -> float | None:
        return row.total if key == TOTAL else row.tasks.get(key)

    present = [(row, v) for row in rows if (v := value(row)) is not None]
    absent = [row for row in rows if value(row) is None]
    present.sort(key=lambda pair: (pair[0].partial if key == TOTAL else False, -pair[1] if descending else pair[1]))
    return [row for row, _ in present] + absent
