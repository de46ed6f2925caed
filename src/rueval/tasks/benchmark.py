"""Benchmark: tasks declared together, with what they share as a benchmark: a total, a submission,
the papers' rows a run is ranked among, and the record counts of the official files.

A benchmark is a value in its declaration module (rueval.tasks.rsg, rueval.tasks.tape,
rueval.tasks.mera); the rest of rueval reads its attributes and never names it. What lives in a
higher layer (the papers' rows in rueval.report, the submission writers in rueval.run) is named as
"module:NAME" and resolved there (rueval.core.named), so this layer imports nothing above it.
Tasks of one's own name their benchmark and get a plain one (no total, no papers' rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from rueval.tasks.base import Task


@dataclass(frozen=True)
class Total:
    """A benchmark's total over its tasks' scores (x100); none unless every task of ``tasks`` has one.

    ``per_metric`` empty: the mean of the task scores, each the mean of its metrics (RSG's total).
    Otherwise one mean per metric position over the tasks, named so (TAPE's "Avg": F1, then
    accuracy or EM)."""

    tasks: tuple[str, ...]
    title: str = "Total"
    per_metric: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """The total's columns in a table of numbers."""
        return self.per_metric or ("total",)

    def of(self, values: Mapping[str, Sequence[float]]) -> tuple[float, ...] | None:
        """``values``: each task's metrics in the task's order (its score alone where only that is known)."""
        if not all(values.get(task) for task in self.tasks):
            return None
        if not self.per_metric:
            return (fmean(fmean(values[task]) for task in self.tasks),)
        return tuple(fmean(values[task][i] for task in self.tasks) for i in range(len(self.per_metric)))


@dataclass(frozen=True)
class Benchmark:
    """Tasks declared together (``-t NAME`` selects them), and what follows from being a benchmark.

    ``tasks`` are the ones its declaration names, in its papers' column order: the total, the
    submission and the official counts are about these. A task declared later with ``benchmark=``
    this name joins ``-t NAME`` and the leaderboard's columns, and changes none of them.
    """

    name: str  # what -t takes, and what a task's ``benchmark`` names
    title: str = ""  # as its papers print it; the name upper-cased unless given
    tasks: tuple[Task, ...] = ()
    total: Total | None = None
    # task -> split -> records in the official files; a run of another count is not comparable with the papers
    official_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    references: str = ""  # "module:NAME" of its papers' rows (rueval.report.reference.ScoreRow); "" for none
    # "module:NAME" of the function writing its submission zip from a run's folder (`rueval export`); "" for none
    submission: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "title", self.title or self.name.upper())
        own = {task.name for task in self.tasks}
        named = {*(self.total.tasks if self.total else ()), *self.official_counts}
        if not named <= own:
            raise ValueError(f"{self.name}: {', '.join(sorted(named - own))} not among its tasks")

    def official_count(self, task: str, split: str) -> int | None:
        """The records of the task's split in the official files; None where the benchmark gives none."""
        return self.official_counts.get(task, {}).get(split)


__all__ = ["Benchmark", "Total"]
