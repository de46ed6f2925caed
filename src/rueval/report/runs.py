"""Finished runs read back for reports and leaderboards, each labelled for display."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rueval.core.errors import RuevalError
from rueval.data import BUNDLED_SAMPLES
from rueval.report.reference import ScoreRow
from rueval.results import RunResult, TaskResult
from rueval.tasks import TASKS, Benchmark


@dataclass(frozen=True)
class Run:
    """One run directory and its results.json (checked when read)."""

    dir: Path
    label: str  # the model name, with the directory name added when two runs share a model
    results: RunResult

    @property
    def tasks(self) -> Mapping[str, TaskResult]:
        return self.results.tasks

    def benchmark_tasks(self, benchmark: Benchmark) -> dict[str, TaskResult]:
        """The run's tasks read from the benchmark's files (a MERA run's RCB is MERA's, not RSG's)."""
        return {name: r for name, r in self.tasks.items() if (r.benchmark or TASKS[name].benchmark) == benchmark.name}

    def not_comparable(self, benchmark: Benchmark) -> tuple[str, str]:
        """Why the run's scores on the benchmark are not comparable with its papers' rows, briefly and
        in full; ("", "") when they are. The papers scored the official files whole: a run on the
        bundled samples, or on a split of another record count than the official one, scored others."""
        if self.results.data == BUNDLED_SAMPLES:
            return "bundled samples", "scored on rueval's bundled samples, not on the official files"
        counts = []
        for name, result in self.benchmark_tasks(benchmark).items():
            official = benchmark.official_count(name, result.split)
            if official is not None and result.records != official:
                found = "an unknown number of" if result.records is None else f"{result.records:,}"
                counts.append(f"{name}'s {result.split} split has {found} records, the official files {official:,}")
        return ("record counts", "; ".join(counts)) if counts else ("", "")

    def score_rows(self, benchmark: Benchmark) -> list[ScoreRow]:
        """The run's rows for a benchmark table: one row, or one per k when tasks were run few-shot.
        A --limit run's rows are marked partial, and a run of other data than the official files'
        not comparable: they are shown, never ranked among the papers'."""
        tasks = self.benchmark_tasks(benchmark)
        if not tasks:
            return []
        kind, label, note = "run", self.label, ""
        if self.results.partial:
            kind, label = "partial", f"{self.label} (partial: --limit {self.results.settings['limit']})"
        elif (why := self.not_comparable(benchmark))[0]:
            label, note = f"{self.label} (not comparable: {why[0]})", f"not comparable with the papers' rows, {why[1]}"
        shots = sorted({k for r in tasks.values() for k in r.shots})
        if not shots:
            metrics = {name: dict(r.metrics) for name, r in tasks.items()}
            return [ScoreRow(label, benchmark.name, str(self.dir), metrics, kind=kind, note=note)]
        rows = []
        for k in shots:
            at_k = {name: r.shots[k] for name, r in tasks.items() if k in r.shots}
            metrics = {name: dict(s.metrics) for name, s in at_k.items()}
            std = {name: dict(s.std) for name, s in at_k.items()}
            rows.append(ScoreRow(label, benchmark.name, str(self.dir), metrics, std, k=k, kind=kind, note=note))
        return rows


def task_names(runs: Sequence[Run]) -> list[str]:
    """Every task the runs scored: rueval's own in its registry's order, then task files' in the runs' order."""
    scored = dict.fromkeys(name for run in runs for name in run.tasks)
    return [*(name for name in TASKS if name in scored), *(name for name in scored if name not in TASKS)]


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
