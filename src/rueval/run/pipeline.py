"""A run, in named stages as the data flows: prepare (the spec's data read and checked, its solver
made) -> reuse (the finished tasks of the same settings) -> predict (rueval.run.predict: a language
model's requests pooled over every task, k and episode) -> score and record each task -> summarise.
The run store owns the run directory (rueval.run.store).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rueval.core import unsafe_code
from rueval.core.errors import RuevalError
from rueval.core.progress import detail, warn
from rueval.data import DataSource, TaskData, load_task_data, open_data, tape_set_of
from rueval.data.mera_generative_tasks import GENERATIVE, NOT_MERA, UNSCORED
from rueval.models.distributed import on_main, world
from rueval.results import PredictionRow, PromptResult, PromptScores, RunResult, ShotResult, TaskResult
from rueval.results.lm_eval import lm_eval_results
from rueval.results.scores import mean_of, std_of
from rueval.run.diagnostics import diagnose, industrial_figures, run_industrial
from rueval.run.predict import Predicted, predict_tasks
from rueval.run.spec import RunSpec
from rueval.run.store import FILES, RESOLVED, RunStore, fingerprint, resolved_settings
from rueval.scoring.task_scores import rsg_total, score_task
from rueval.solvers import Setting, Solver
from rueval.solvers.base import TaskAnswers
from rueval.tasks import TAPE, Example, Task
from rueval.tasks.fewshot import demonstrations

if TYPE_CHECKING:
    from rueval.run.robustness import Robustness


@dataclass(frozen=True)
class Prepared:
    """A run ready to predict: its data read and checked, its solver made, and the settings it records
    (run.json: the spec's JSON with the model's exact identity and rueval's version)."""

    spec: RunSpec
    store: RunStore
    source: DataSource
    loaded: list[tuple[Task, TaskData]]
    solver: Solver
    robustness: Robustness | None
    settings: dict[str, Any]


def run(spec: RunSpec, out: Path, force: bool = False, solver: Solver | None = None) -> RunResult:
    """Evaluate as ``spec`` says; write OUT/results.json, OUT/predictions/ and OUT/tasks/ (and with
    ``log_samples`` OUT/samples/, each example's prompts and scores). Another run's results in OUT
    stop the run unless ``force`` replaces them. ``solver``: one already made (the Python API's
    in-memory models); by default the spec's."""
    if spec.task_files:
        raise RuevalError(
            "task files run with `rueval run`, or from Python with lm_eval.simple_evaluate(model=RuevalLM(...)) "
            "(rueval.models.backends.lm_eval_lm)"
        )
    started = time.perf_counter()
    prepared = prepare(spec, Path(out), solver)
    kept, results = on_main(lambda: reuse(prepared, force))  # under accelerate launch, the main process decides
    reused = list(results)
    pending = [(task, data) for task, data in prepared.loaded if task.name not in results]
    if spec.confirm_run_unsafe_code and any(GENERATIVE.get(task.name, NOT_MERA).executes for task, _ in pending):
        warn(unsafe_code.warning())
    try:
        with unsafe_code.allowed(spec.confirm_run_unsafe_code):
            for predicted in predict_tasks(prepared.solver, pending, spec.settings, spec.log_samples, spec.prompts_of):
                results[predicted.task.name] = score_and_record(prepared, predicted)
    except RuevalError:
        prepared.store.withdraw()  # refused before a task finished: the run writes nothing
        raise
    return summarise(prepared, kept, results, reused, started)


def prepare(spec: RunSpec, out: Path, solver: Solver | None = None) -> Prepared:
    """Read and check every task's data, then make the solver (fine-tuning checkpoints live in the run
    directory, so a killed run resumes from them) and the perturbations: bad input fails before a
    model loads or anything is asked of a server."""
    spec.check_consents()
    store = RunStore(out)
    store.check_folder()  # a user's own folder is refused before a model loads
    source = open_data(spec.data, spec.read_limits, spec.tape_set)
    loaded = [(task, limited_data(source, task, spec.split, spec.limit, spec.predict_only)) for task in spec.task_list]
    for task, task_data in loaded:
        train_examples = task_data.train.examples if task_data.train else []
        for setting in spec.settings(task):  # a k the train split cannot give fails now, before anything is written
            demonstrations(train_examples, setting.k, 0, setting.per_item_seed, 0, spec.seed, task.name)
        train = f", {len(task_data.train.examples)} train" if task_data.train else ""
        detail(f"{task.name}: {len(task_data.eval.examples)} {task_data.eval.name} examples{train}")
    solver = solver or spec.solver(store.out.resolve() / "finetune")
    robustness = None
    if spec.robustness:
        from rueval.run.robustness import Robustness  # the perturbations load only when asked for

        robustness = Robustness.build(spec.robustness, spec.seed)
    return Prepared(spec, store, source, loaded, solver, robustness, resolved_settings(spec, solver))


def reuse(prepared: Prepared, force: bool) -> tuple[dict[str, TaskResult], dict[str, TaskResult]]:
    """The earlier run's results kept (its other tasks, same settings), and the finished tasks reused as
    they are (with their sample logs when the run keeps them)."""
    store = prepared.store
    kept = store.claim(prepared.settings, prepared.spec.tasks, force)
    store.save_spec(prepared.settings)  # the input is valid: the work begins
    reusable = {}
    for task, task_data in prepared.loaded:
        stored = store.stored(task, task_fingerprint(prepared, task, task_data))
        if stored is not None and (store.has_samples(task) or not prepared.spec.log_samples):
            reusable[task.name] = stored
    return kept, reusable


def score_and_record(prepared: Prepared, predicted: Predicted) -> TaskResult:
    """The task's scores, intervals, slices and attacks, written with its predictions (and sample log)."""
    spec, task, examples = prepared.spec, predicted.task, predicted.data.eval.examples
    started = time.perf_counter()
    if spec.predict_only or not predicted.data.eval.labelled:
        result = unscored(predicted)
        result.industrial = industrial_figures(len(examples), predicted.seconds, prepared.solver)
    else:
        result = score(predicted)
        diagnose(result, task, examples, predicted.headline, predicted.seconds, prepared.solver, spec.slices, spec.seed)
        if prepared.robustness:  # scores and attack success rates per perturbation (TAPE Table 4)
            read = records_read(predicted.data, spec.limit)
            result.perturbations = prepared.robustness.evaluate(prepared.source, task, predicted, read)
    result.benchmark = prepared.source.benchmark_of(task)  # MERA's files: MERA's scores, not the task's paper's
    result.fingerprint = task_fingerprint(prepared, task, predicted.data)
    result.wall_time_s = predicted.seconds + time.perf_counter() - started
    samples = predicted.samples if spec.log_samples else None
    prepared.store.record(task, result, prediction_rows(predicted), samples)
    scoring_seconds = result.wall_time_s - predicted.seconds
    detail(f"{task.name}: predicted in {predicted.seconds:.1f} s, scored in {scoring_seconds:.1f} s")
    return result


def summarise(
    prepared: Prepared,
    kept: dict[str, TaskResult],
    results: dict[str, TaskResult],
    reused: list[str],
    started: float,
) -> RunResult:
    """OUT/results.json (and its lm-eval twin): every task of the run, then the earlier ones kept."""
    if (launch := world()) is not None:
        prepared.store.notes.append(launch.note())
    ordered = {task.name: results[task.name] for task, _ in prepared.loaded}
    for name, result in ordered.items():
        if result.score is None:
            why = "--predict-only" if prepared.spec.predict_only else f"the {result.split} split has no answers"
            why = UNSCORED.get(name, why)
            prepared.store.notes.append(f"{name}: {result.n} {result.split} examples predicted, not scored ({why})")
    everything = {**kept, **ordered}
    scored_tasks = {name: r for name, r in everything.items() if r.score is not None}
    # the run's settings, naming where the data came from (the bundled samples too); its tasks are below
    settings = {key: value for key, value in prepared.settings.items() if key != "tasks"}
    if settings["limit"] is not None and not kept and all(data.eval.complete for _, data in prepared.loaded):
        prepared.store.notes.append(f"--limit {settings['limit']} cut no task short: these are the benchmark's scores")
        settings["limit"] = None  # not partial
    summary = RunResult(
        settings={**settings, "data": prepared.source.description},
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        wall_time_s=time.perf_counter() - started,
        rsg_total=rsg_total({name: r.score for name, r in everything.items() if r.score is not None}),
        # timings of this run's own work: a reused task's figures are the earlier run's
        industrial=run_industrial({name: r for name, r in ordered.items() if name not in reused}, prepared.solver),
        tasks=scored_tasks,
        predicted={name: r for name, r in everything.items() if r.score is None},
        reused=reused,
        notes=prepared.store.notes,
    )
    prepared.store.write_results(summary, lm_eval_results(summary))  # the same results in lm-eval's schema too
    return summary


def task_fingerprint(prepared: Prepared, task: Task, task_data: TaskData) -> str:
    """Everything a task's result depends on: the spec's fingerprint, the model's exact identity and
    rueval's version, then the task, its scored split and its data."""
    run_key = {
        "spec": prepared.spec.fingerprint(),
        **{k: prepared.settings[k] for k in RESOLVED if k in prepared.settings and k != FILES},
    }
    return fingerprint(run_key, task, task_data)


def limited_data(
    source: DataSource, task: Task, split: str | None, limit: float | None, predict_only: bool = False
) -> TaskData:
    """The task's data, its eval split cut to the first ``limit`` records or, below 1, to that share
    of its records rounded up, as lm-eval does (a copy made by a perturbation is no record of its own)."""
    if limit is None or limit >= 1:
        return load_task_data(source, task, split, None if limit is None else int(limit), predict_only)
    data = load_task_data(source, task, split, None, predict_only)
    records = list(dict.fromkeys(_record(example) for example in data.eval.examples))
    kept = set(records[: math.ceil(limit * len(records))])
    examples = [example for example in data.eval.examples if _record(example) in kept]
    return replace(data, eval=replace(data.eval, examples=examples, complete=len(kept) == len(records)))


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
    standard deviation over its episodes (numpy's, ddof 0), and with several prompts each prompt's
    scores with their mean and standard deviation, as TAPE reports them."""
    task, examples = predicted.task, predicted.data.eval.examples
    scores = score_task(task, examples, predicted.headline)
    result = unscored(predicted)
    result.score, result.metrics, result.breakdown = scores.score, scores.metrics, scores.breakdown
    if predicted.requests_computed is not None:  # a language model: few-shot settings are recorded
        result.shots = few_shot_scores(task, examples, predicted.by_setting, predicted.normalized)
    if predicted.prompt_answers:
        result.prompts = PromptScores(tuple(prompt_result(task, examples, one) for one in predicted.prompt_answers))
    return result


def prompt_result(task: Task, examples: Sequence[Example], answers: TaskAnswers) -> PromptResult:
    """The task under one prompt, as its headline and few-shot figures would be under it (each k over
    its episodes where the run has more than one setting)."""
    scores = score_task(task, examples, next(iter(answers.by_setting.values())))
    several = len(answers.by_setting) > 1
    shots = few_shot_scores(task, examples, answers.by_setting, answers.normalized) if several else {}
    return PromptResult(scores.score, scores.metrics, shots)


def unscored(predicted: Predicted) -> TaskResult:
    """A task's result without scores: what it predicted, on which data, how (a predict-only task's)."""
    task, data = predicted.task, predicted.data
    return TaskResult(
        benchmark=task.benchmark,
        split=data.eval.name,
        n=len(data.eval.examples),
        score=None,
        metrics={},
        data={
            "file": data.eval.file,
            "train_file": data.train.file if data.train else None,
            "sha256": data.sha256,
            **({"tape_set": tape_set_of(data.eval.file)} if task.benchmark == TAPE.name else {}),
        },
        records=len({_record(example) for example in data.eval.examples}),
        requests_computed=predicted.requests_computed,
        protocol=predicted.protocol,
        unmatched_answers=predicted.unmatched_answers,
    )


def few_shot_scores(
    task: Task,
    examples: Sequence[Any],
    by_setting: dict[Setting, list[Any]],
    normalized: dict[Setting, list[Any]],
) -> dict[int, ShotResult]:
    """Each k's metrics as mean and std over its episodes, from the predictions in every setting (and
    per byte, lm-eval's acc_norm, where ``normalized`` has them)."""
    by_k: dict[int, list[Setting]] = {}
    for setting in by_setting:
        by_k.setdefault(setting.k, []).append(setting)
    shots = {}
    for k, settings in by_k.items():
        episodes = []
        for setting in settings:
            scores = score_task(task, examples, by_setting[setting])
            episode: dict[str, Any] = {"metrics": scores.metrics, "score": scores.score}
            if setting in normalized:
                episode["metrics_norm"] = score_task(task, examples, normalized[setting]).metrics
            episodes.append(episode)
        norm = [e["metrics_norm"] for e in episodes if "metrics_norm" in e]
        shots[k] = ShotResult(
            metrics=mean_of([e["metrics"] for e in episodes]),
            std=std_of([e["metrics"] for e in episodes]),
            score=float(np.mean([e["score"] for e in episodes])),
            score_std=float(np.std([e["score"] for e in episodes])),
            episodes=episodes,
            metrics_norm=mean_of(norm) if norm else None,
            metrics_norm_std=std_of(norm) if norm else None,
        )
    return shots


def prediction_rows(predicted: Predicted) -> list[PredictionRow]:
    return [
        PredictionRow(e.idx, p, e.label, e.group)
        for e, p in zip(predicted.data.eval.examples, predicted.headline, strict=True)
    ]
