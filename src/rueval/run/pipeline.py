"""A run, as the data flows: load every task's data -> for each task (stored? -> predict -> score
-> diagnose -> record) -> summarise. The predict stage pools a language model's requests over
every task, k and episode (rueval.run.predict); the run store owns the run directory
(rueval.run.store).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rueval import __version__
from rueval.data import MAX_LINE_BYTES, DataSource, TaskData, load_task_data, open_data, tape_set_of
from rueval.errors import RuevalError
from rueval.files import write_json
from rueval.models.distributed import on_main, world
from rueval.progress import detail
from rueval.results import PredictionRow, RunResult, ShotResult, TaskResult
from rueval.results.lm_eval import FILE_NAME as LM_EVAL_FILE
from rueval.results.lm_eval import lm_eval_results
from rueval.run.diagnostics import diagnose, run_industrial
from rueval.run.predict import Predicted, predict_tasks, settings_of
from rueval.run.store import RunStore, fingerprint
from rueval.scoring import rsg_total, score_task
from rueval.slices import check_slice_names
from rueval.solvers import FINETUNE_PREFIX, Setting, Solver, make_solver
from rueval.tasks import Example, Task

if TYPE_CHECKING:
    from rueval.run.robustness import Robustness


def run(
    tasks: Sequence[Task],
    model: str,
    out: Path,
    data: str | None = None,
    split: str | None = None,
    seed: int = 0,
    limit: float | None = None,
    solver_options: Mapping[str, Any] | None = None,
    slices: Sequence[str] = (),
    shots: Sequence[int] = (0,),
    episodes: int = 1,
    robustness: Robustness | None = None,
    options: Mapping[str, Any] | None = None,
    force: bool = False,
    log_samples: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    tape_set: str = "episodes",
    solver: Solver | None = None,
) -> RunResult:
    """Evaluate ``model`` on ``tasks``; write OUT/results.json, OUT/predictions/ and OUT/tasks/
    (and with ``log_samples`` OUT/samples/, each example's prompts and scores).

    ``solver_options`` go to the solver's factory (e.g. the heuristic model's fallback); ``options``
    (the command line's) are saved in OUT/run.json for --resume. ``solver``: one already made (the
    Python API's in-memory models), named ``model`` in the results. ``limit``: the first N records of
    each task, or below 1 that share of them, rounded up (lm-eval's --limit)."""
    started = time.perf_counter()
    limit = check_limit(limit)
    source = open_data(data, max_line_bytes, tape_set)
    solver_options = dict(solver_options or {})
    if model.startswith(FINETUNE_PREFIX):  # checkpoints live in the run directory: a killed run resumes from them
        solver_options.setdefault("work_dir", str(Path(out).resolve() / "finetune"))
    solver = solver or make_solver(model, seed, **solver_options)
    # All data is read and checked before any work: bad input fails fast and writes nothing.
    loaded = [(task, limited_data(source, task, split, limit)) for task in tasks]
    for task, task_data in loaded:
        train = f", {len(task_data.train.examples)} train" if task_data.train else ""
        detail(f"{task.name}: {len(task_data.eval.examples)} {task_data.eval.name} examples{train}")
    # The settings are part of every task's fingerprint: a rerun with other settings recomputes.
    settings = {
        "model": model,
        "model_identity": getattr(solver, "identity", model),  # an LM's exact weights: a changed model recomputes
        "solver_options": solver_options,
        "shots": list(shots),
        "episodes": episodes,
        "seed": seed,
        "limit": limit,
        "data": source.description,
        "tape_set": tape_set,
        "rueval_version": __version__,
        "slices": list(check_slice_names(slices)),  # names from rueval.slices; scored per task
        **({"robustness": robustness.describe()} if robustness else {}),
    }
    store = RunStore(out)

    def claim() -> tuple[dict[str, TaskResult], dict[str, TaskResult]]:
        """The earlier run's results kept, and the finished tasks reused as they are."""
        kept = store.claim(settings, list(tasks), force)
        store.save_options(options or {}, settings)  # the input is valid: the work begins
        reusable = {}
        for task, task_data in loaded:
            stored = store.stored(task, fingerprint(settings, task, task_data))
            if stored is not None and (store.has_samples(task) or not log_samples):
                reusable[task.name] = stored
        return kept, reusable

    kept, results = on_main(claim)  # under accelerate launch, decided by the main process for all
    reused = list(results)
    pending = [(task, task_data) for task, task_data in loaded if task.name not in results]
    for predicted in predict_tasks(solver, pending, settings_of(shots, episodes), log_samples):
        task, examples = predicted.task, predicted.data.eval.examples
        started_scoring = time.perf_counter()
        result = score(predicted)
        diagnose(result, task, examples, predicted.headline, predicted.seconds, solver, settings["slices"], seed)
        if robustness:  # scores and attack success rates per perturbation (TAPE Table 4)
            result.perturbations = robustness.evaluate(source, task, predicted, records_read(predicted.data, limit))
        result.fingerprint = fingerprint(settings, task, predicted.data)
        result.wall_time_s = predicted.seconds + time.perf_counter() - started_scoring
        store.record(task, result, prediction_rows(predicted), predicted.samples if log_samples else None)
        results[task.name] = result
        scoring_seconds = result.wall_time_s - predicted.seconds
        detail(f"{task.name}: predicted in {predicted.seconds:.1f} s, scored in {scoring_seconds:.1f} s")
    if (launch := world()) is not None:
        store.notes.append(launch.note())
    ordered = {task.name: results[task.name] for task, _ in loaded}
    everything = {**kept, **ordered}
    summary = RunResult(
        settings=settings,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        wall_time_s=time.perf_counter() - started,
        rsg_total=rsg_total({name: r.score for name, r in everything.items()}),
        # timings of this run's own work: a reused task's figures are the earlier run's
        industrial=run_industrial({name: r for name, r in ordered.items() if name not in reused}, solver),
        tasks=everything,
        reused=reused,
        notes=store.notes,
    )
    store.write_results(summary)
    write_json(out / LM_EVAL_FILE, lm_eval_results(summary))  # the same results in lm-eval's schema
    return summary


def check_limit(limit: float | None) -> int | float | None:
    """--limit as lm-eval reads it: a whole number of records, or a share of them between 0 and 1."""
    if limit is None or 0 < limit < 1:
        return limit
    if limit < 1 or limit != int(limit):
        raise RuevalError(f"--limit {limit}: expected a whole number of records, or a share between 0 and 1")
    return int(limit)


def limited_data(source: DataSource, task: Task, split: str | None, limit: float | None) -> TaskData:
    """The task's data, its eval split cut to the first ``limit`` records or, below 1, to that share
    of its records rounded up, as lm-eval does (a copy made by a perturbation is no record of its own)."""
    if limit is None or limit >= 1:
        return load_task_data(source, task, split, None if limit is None else int(limit))
    data = load_task_data(source, task, split, None)
    records = list(dict.fromkeys(_record(example) for example in data.eval.examples))
    kept = set(records[: math.ceil(limit * len(records))])
    examples = [example for example in data.eval.examples if _record(example) in kept]
    return replace(data, eval=replace(data.eval, examples=examples))


def records_read(data: TaskData, limit: float | None) -> int | None:
    """How many records of the eval split a limited run read (the perturbed copies read with them follow it)."""
    if limit is None or limit >= 1:
        return None if limit is None else int(limit)
    return len({_record(example) for example in data.eval.examples})


def _record(example: Example) -> Any:
    """The record an example came from: MuSeRC and RuCoS give several per record, their idx starting with its."""
    return example.idx[0] if isinstance(example.idx, tuple) else example.idx


def score(predicted: Predicted) -> TaskResult:
    """The task's metrics on its headline predictions and, for a language model, every k's mean and
    standard deviation over its episodes (numpy's, ddof 0), as TAPE reports them."""
    task, examples = predicted.task, predicted.data.eval.examples
    scores = score_task(task, examples, predicted.headline)
    result = TaskResult(
        benchmark=task.benchmark,
        split=predicted.data.eval.name,
        n=len(examples),
        score=scores.score,
        metrics=scores.metrics,
        breakdown=scores.breakdown,
        data={
            "file": predicted.data.eval.file,
            "train_file": predicted.data.train.file if predicted.data.train else None,
            "sha256": predicted.data.sha256,
            **({"tape_set": tape_set_of(predicted.data.eval.file)} if task.benchmark == "tape" else {}),
        },
        requests_computed=predicted.requests_computed,
        protocol=predicted.protocol,
        unmatched_answers=predicted.unmatched_answers,
    )
    if predicted.requests_computed is not None:  # a language model: few-shot settings are recorded
        result.shots = few_shot_scores(task, examples, predicted)
    return result


def few_shot_scores(task: Task, examples: Sequence[Any], predicted: Predicted) -> dict[int, ShotResult]:
    by_k: dict[int, list[Setting]] = {}
    for setting in predicted.by_setting:
        by_k.setdefault(setting.k, []).append(setting)
    shots = {}
    for k, settings in by_k.items():
        episodes = []
        for setting in settings:
            scores = score_task(task, examples, predicted.by_setting[setting])
            episode: dict[str, Any] = {"metrics": scores.metrics, "score": scores.score}
            if setting in predicted.normalized:
                episode["metrics_norm"] = score_task(task, examples, predicted.normalized[setting]).metrics
            episodes.append(episode)
        norm = [e["metrics_norm"] for e in episodes if "metrics_norm" in e]
        shots[k] = ShotResult(
            metrics=_mean([e["metrics"] for e in episodes]),
            std=_std([e["metrics"] for e in episodes]),
            score=float(np.mean([e["score"] for e in episodes])),
            score_std=float(np.std([e["score"] for e in episodes])),
            episodes=episodes,
            metrics_norm=_mean(norm) if norm else None,
            metrics_norm_std=_std(norm) if norm else None,
        )
    return shots


def _mean(runs: list[dict[str, float]]) -> dict[str, float]:
    return {m: float(np.mean([r[m] for r in runs])) for m in runs[0]}


def _std(runs: list[dict[str, float]]) -> dict[str, float]:
    return {m: float(np.std([r[m] for r in runs])) for m in runs[0]}


def prediction_rows(predicted: Predicted) -> list[PredictionRow]:
    return [
        PredictionRow(e.idx, p, e.label, e.group)
        for e, p in zip(predicted.data.eval.examples, predicted.headline, strict=True)
    ]
