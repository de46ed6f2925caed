"""What a run records for each task beyond its scores: bootstrap confidence intervals, scores per
slice (TAPE's subpopulations) and industrial figures.

The industrial figures follow the industrial assessment RSG proposes for its leaderboard (Shavrina
et al., 2020, Sections 5 and 6): memory needed, speed, model size. Time is measured around fitting
and predicting a task, so for solvers that train it includes training; throughput and latency are
averages over the task's examples (a solver may batch them), and peak memory is the peak resident
set of the process up to the end of the task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rueval.core.memory import peak_rss_mb
from rueval.results import TaskResult
from rueval.scoring.slices import slice_scores
from rueval.scoring.stats import bootstrap_ci
from rueval.solvers import Solver
from rueval.tasks import Example, Task


def industrial_figures(examples: int, seconds: float, solver: Solver) -> dict[str, Any]:
    """Throughput, latency per example, peak memory, and the model's size when the solver reports it."""
    figures: dict[str, Any] = {
        "examples": examples,
        "seconds": seconds,
        "examples_per_s": examples / seconds if seconds > 0 else None,
        "latency_ms_per_example": 1000 * seconds / examples if examples else None,
        "peak_rss_mb": peak_rss_mb(),
    }
    size = solver.size()
    if size is not None:
        reported = {"parameters": size.parameters, "model_size_mb": size.megabytes}
        figures.update({key: value for key, value in reported.items() if value is not None})
    return figures


def diagnose(
    result: TaskResult,
    task: Task,
    examples: Sequence[Example],
    preds: Sequence[Any],
    seconds: float,
    solver: Solver,
    slices: Sequence[str],
    seed: int,
) -> None:
    """Add a task result's intervals, industrial figures and (when asked for) scores per slice."""
    result.ci = bootstrap_ci(task, examples, preds, seed=seed)
    result.industrial = industrial_figures(len(examples), seconds, solver)
    if training := solver.training_report(task):
        result.industrial["training"] = training
    if slices:
        result.slices = slice_scores(task, examples, preds, slices)


def run_industrial(results: Mapping[str, TaskResult], solver: Solver) -> dict[str, Any]:
    """The run's industrial figures: throughput and latency over all tasks' examples, the highest peak
    memory, and the model size (as the solver reports it now, else as a task recorded it); empty
    when no task was computed."""
    per_task = [r.industrial for r in results.values() if r.industrial]
    if not per_task:
        return {}
    figures = industrial_figures(sum(f["examples"] for f in per_task), sum(f["seconds"] for f in per_task), solver)
    figures["peak_rss_mb"] = max([figures["peak_rss_mb"], *(f["peak_rss_mb"] for f in per_task)])
    for key in ("parameters", "model_size_mb"):
        recorded = [f[key] for f in per_task if key in f]
        if key not in figures and recorded:
            figures[key] = recorded[-1]
    return figures
