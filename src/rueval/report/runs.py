"""Finished runs read back for reports and leaderboards, each labelled for display."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rueval.core.errors import RuevalError
from rueval.report.reference import ScoreRow
from rueval.results import RunResult, TaskResult
from rueval.tasks import TASKS


@dataclass(frozen=True)
class Run:
    """One run directory and its results.json (checked when read)."""

    dir: Path
    label: str  # the model name, with the directory name added when two runs share a model
    results: RunResult

    @property
    def tasks(self) -> Mapping[str, TaskResult]:
        return self.results.tasks

    def benchmark_tasks(self, benchmark: str) -> dict[str, TaskResult]:
        return {name: r for name, r in self.tasks.items() if TASKS[name].benchmark == benchmark}

    def score_rows(self, benchmark: str) -> list[ScoreRow]:
        """The run's rows for a benchmark table: one row, or one per k when tasks were run few-shot.
        A --limit run's rows are marked partial: they are shown, never ranked among the papers'."""
        tasks = self.benchmark_tasks(benchmark)
        if not tasks:
            return []
        kind = "partial" if self.results.partial else "run"
        label = (
            f"{self.label} (partial: --limit {self.results.settings['limit']})" if self.results.partial else self.label
        )
        shots = sorted({k for r in tasks.values() for k in r.shots})
        if not shots:
            metrics = {name: dict(r.metrics) for name, r in tasks.items()}
            return [ScoreRow(label, benchmark, str(self.dir), metrics, kind=kind)]
        rows = []
        for k in shots:
            at_k = {name: r.shots[k] for name, r in tasks.items() if k in r.shots}
            metrics = {name: dict(s.metrics) for name, s in at_k.items()}
            std = {name: dict(s.std) for name, s in at_k.items()}
            rows.append(ScoreRow(label, benchmark, str(self.dir), metrics, std, k=k, kind=kind))
        return rows


def load_runs(dirs: Sequence[Path]) -> list[Run]:
    """Read and check each RUN_DIR/results.json; label runs by model, disambiguated by directory."""
    if not dirs:
        raise RuevalError("no run directory given")
    loaded = [(Path(d), RunResult.read(Path(d))) for d in dirs]
    models = Counter(results.model for _, results in loaded)
    return [
        Run(d, results.model if models[results.model] == 1 else f"{results.model} ({d.name})", results)
        for d, results in loaded
    ]
