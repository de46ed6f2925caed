"""A run: load every task's data, fit and apply a solver, score, and write the results.

OUT/results.json is written once, atomically, after every task has finished; each finished
task is also kept in OUT/tasks/<task>.json, so a rerun with the same settings on the same data
reuses it instead of computing it again (an interrupted run resumes where it stopped).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rueval import __version__
from rueval.data import DataSource, Split, open_data
from rueval.diagnostics import run_industrial, task_diagnostics, timed
from rueval.errors import RuevalError
from rueval.metrics import rsg_total, score_task
from rueval.progress import progress
from rueval.report.results import read_json, write_json, write_jsonl
from rueval.slices import check_slice_names
from rueval.solvers import Solver, make_solver
from rueval.solvers.lm import LMSolver
from rueval.tasks import TASKS, Example, Task

if TYPE_CHECKING:
    from rueval.robustness import Robustness


@dataclass(frozen=True)
class TaskData:
    """What one task is evaluated on: the scored split and the split the solver learns from."""

    task: Task
    eval: Split
    train: Split | None

    @property
    def sha256(self) -> str:
        """One hash over the files the task's score depends on."""
        parts = [self.eval.sha256, self.train.sha256 if self.train else ""]
        return hashlib.sha256("/".join(parts).encode()).hexdigest()


def load_task_data(source: DataSource, task: Task, split: str | None, limit: int | None) -> TaskData:
    return TaskData(task, eval_split(source, task, split, limit), load_train(source, task))


def eval_split(source: DataSource, task: Task, split: str | None, limit: int | None) -> Split:
    """The requested split, or by default test when it is labelled, else val."""
    if split is not None:
        chosen = source.load(task, split, limit)
        if not chosen.labelled:
            raise RuevalError(
                f"{chosen.file}: the {split} split of {task.name} has no gold labels, so it cannot be "
                "scored; score val, or predict it with `rueval submit`"
            )
        return chosen
    test = source.load(task, "test", limit) if source.has_split(task, "test") else None
    if test is not None and test.labelled:
        return test
    if "val" not in task.split_files or not source.has_split(task, "val"):
        if test is None:
            raise source.missing(task, "test")
        raise RuevalError(f"{test.file}: {task.name} has no gold labels in test and no val split to score instead")
    return source.load(task, "val", limit)


def load_train(source: DataSource, task: Task) -> Split | None:
    """The task's train split, or the one it borrows (LiDiRus: TERRa's), its fields renamed to
    the task's own (premise -> sentence1), so solvers see one layout."""
    if source.has_split(task, "train"):
        return source.load(task, "train")
    if task.train_task and source.has_split(TASKS[task.train_task], "train"):
        borrowed = source.load(TASKS[task.train_task], "train")
        renames = task.extra.get("train_fields", {})
        examples = [
            replace(e, fields={renames.get(name, name): value for name, value in e.fields.items()})
            for e in borrowed.examples
        ]
        return replace(borrowed, task=task, examples=examples)
    return None


def solve(solver: Solver, task: Task, train: Split | None, examples: Sequence[Example]) -> list[Any]:
    """Fit the solver on the train split (if any) and predict the examples."""
    solver.fit(task, train.examples if train else [])
    return solver.predict(task, progress(examples, f"{solver.name} on {task.name}", total=len(examples)))


def solve_episodes(
    solver: Solver, task: Task, train: Split | None, examples: Sequence[Example], shots: Sequence[int], episodes: int
) -> tuple[list[Any], dict[str, Any]]:
    """Predictions of the first k-shot setting's first episode, and for a language model every
    k's scores over its episodes: mean and standard deviation (numpy's, ddof 0), as TAPE reports
    them. With loglik scoring each episode is also scored by per-byte normalised log-likelihood
    (lm-evaluation-harness's acc_norm), from the same cached requests."""
    if not isinstance(solver, LMSolver):
        if list(shots) != [0] or episodes != 1:
            raise RuevalError("--shots and --episodes need a language model (-m hf:... or -m openai:...)")
        return solve(solver, task, train, examples), {}
    headline: list[Any] | None = None
    by_k: dict[str, Any] = {}
    computed_before = solver.engine.computed
    for k in shots:
        runs = []
        for episode in range(episodes if k else 1):
            solver.set_episode(k, episode)
            preds = solve(solver, task, train, examples)
            headline = preds if headline is None else headline
            scores = score_task(task, examples, preds)
            run = {"metrics": scores.metrics, "score": scores.score}
            if solver.scoring == "loglik" and solver.picks_options(task, examples[0]):
                solver.set_episode(k, episode, normalize=True)
                run["metrics_norm"] = score_task(task, examples, solve(solver, task, train, examples)).metrics
            runs.append(run)
        by_k[str(k)] = {
            **_mean_std("metrics", [r["metrics"] for r in runs]),
            **(_mean_std("metrics_norm", [r["metrics_norm"] for r in runs]) if "metrics_norm" in runs[0] else {}),
            "score": float(np.mean([r["score"] for r in runs])),
            "score_std": float(np.std([r["score"] for r in runs])),
            "episodes": runs,
        }
    # Leave the solver as the headline predictions were made, for whatever predicts next (robustness).
    solver.set_episode(shots[0], 0)
    solver.fit(task, train.examples if train else [])
    # Requests the model computed for this task; the rest came from the request cache.
    return headline or [], {"shots": by_k, "requests_computed": solver.engine.computed - computed_before}


def _mean_std(name: str, runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """{name: {metric: mean over episodes}, name_std: {metric: std}}; "metrics" -> "std"."""
    std_name = "std" if name == "metrics" else f"{name}_std"
    return {
        name: {m: float(np.mean([r[m] for r in runs])) for m in runs[0]},
        std_name: {m: float(np.std([r[m] for r in runs])) for m in runs[0]},
    }


def run(
    tasks: Sequence[Task],
    model: str,
    data: str | None = None,
    split: str | None = None,
    out: Path = Path("runs/latest"),
    seed: int = 0,
    limit: int | None = None,
    solver_options: dict[str, Any] | None = None,
    slices: Sequence[str] = (),
    shots: Sequence[int] = (0,),
    episodes: int = 1,
    robustness: Robustness | None = None,
    on_start: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Evaluate ``model`` on ``tasks`` and write OUT/results.json and OUT/predictions/.

    ``solver_options`` go to the solver's factory (e.g. the heuristic model's fallback)."""
    started = time.perf_counter()
    source = open_data(data)
    solver_options = solver_options or {}
    solver = make_solver(model, seed, **solver_options)
    # All data is read and checked before any work: bad input fails fast and writes nothing.
    loaded = [load_task_data(source, task, split, limit) for task in tasks]
    # The options are part of every task's fingerprint: a rerun with other options recomputes.
    settings = {
        "model": model,
        "model_identity": getattr(solver, "identity", model),  # an LM's exact weights: a changed model recomputes
        "solver_options": solver_options,
        "shots": list(shots),
        "episodes": episodes,
        "seed": seed,
        "limit": limit,
        "rueval_version": __version__,
        "slices": list(check_slice_names(slices)),  # names from rueval.slices; scored per task
        **({"robustness": robustness.describe()} if robustness else {}),
    }
    if on_start is not None:  # the input is valid: the work begins (the CLI records its options for --resume)
        on_start()
    results: dict[str, dict[str, Any]] = {}
    for task_data in loaded:
        task = task_data.task
        fingerprint = _fingerprint(settings, task_data)
        saved = out / "tasks" / f"{task.name}.json"
        if saved.exists() and read_json(saved).get("fingerprint") == fingerprint:
            results[task.name] = read_json(saved)
            continue
        task_started = time.perf_counter()
        examples = task_data.eval.examples
        with timed() as timing:
            preds, few_shot = solve_episodes(solver, task, task_data.train, examples, shots, episodes)
        scores = score_task(task, examples, preds)
        write_jsonl(
            out / "predictions" / f"{task.name}.jsonl",
            ({"idx": e.idx, "prediction": p, "gold": e.label} for e, p in zip(examples, preds, strict=True)),
        )
        results[task.name] = {
            "benchmark": task.benchmark,
            "split": task_data.eval.name,
            "n": len(examples),
            "score": scores.score,
            "metrics": scores.metrics,
            "breakdown": scores.breakdown,
            **few_shot,
            **task_diagnostics(task, examples, preds, timing.seconds, solver, settings["slices"], seed),
            "data": {
                "file": task_data.eval.file,
                "train_file": task_data.train.file if task_data.train else None,
                "sha256": task_data.sha256,
            },
            "wall_time_s": time.perf_counter() - task_started,
            "fingerprint": fingerprint,
        }
        if robustness:  # scores and attack success rates per perturbation (TAPE Table 4)
            results[task.name]["perturbations"] = robustness.evaluate(source, task_data, solver, preds, limit)
        write_json(saved, results[task.name])
    summary = {
        **settings,
        "data": source.description,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": time.perf_counter() - started,
        "scale": "metrics are percentages (x100), as in the papers",
        "rsg_total": rsg_total({name: r["score"] for name, r in results.items()}),
        "industrial": run_industrial(results, solver),
        "tasks": results,
    }
    write_json(out / "results.json", summary)
    return summary


def _fingerprint(settings: dict[str, Any], task_data: TaskData) -> str:
    key = {**settings, "task": task_data.task.name, "split": task_data.eval.name, "data": task_data.sha256}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
