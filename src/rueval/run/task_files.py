"""A run of lm-evaluation-harness task files: lm-eval's own evaluator (``simple_evaluate``) builds the
tasks (rueval.tasks.lm_eval_tasks), asks rueval's engine for every request through ``RuevalLM``
(rueval.models.backends.lm_eval_lm: shared prefixes, deduplication, the request cache), and scores the
answers with lm-eval's own code: filters, metrics, group aggregates and standard errors are lm-eval's.

The run folder holds run.json (what --resume continues: the request cache answers every request
computed before), lm-eval's results document as ``results_lmeval.json``, rueval's ``results.json`` and
``predictions/<task>.jsonl`` made from it and lm-eval's per-sample values (rueval.run.task_file_results:
what report, compare and leaderboard read) and, with --log-samples, lm-eval's sample logs as lm-eval writes
them (``samples/samples_<task>_<date id>.jsonl``).

Seeds are lm-eval's: its defaults (0 for Python's, 1234 for numpy's, torch's and the few-shot
sampler's) unless ``--seed`` is given, which sets all four, as lm-eval's ``--seed N`` does.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from rueval.core.background import in_background
from rueval.core.errors import RuevalError
from rueval.core.memory import import_libraries
from rueval.core.progress import detail
from rueval.results import predictions_file, write_sample_scores
from rueval.results.lm_eval import FILE_NAME, SAMPLES_DIR, date_id, sample_files
from rueval.run.spec import RunSpec
from rueval.run.store import RunStore, resolved_settings
from rueval.run.task_file_results import task_file_results
from rueval.tasks.lm_eval_tasks import TaskFiles

LM_EVAL_SEEDS = (0, 1234, 1234, 1234)  # lm-eval's random, numpy, torch and few-shot seeds by default


def run_task_files(spec: RunSpec, out: Path, force: bool = False) -> dict[str, Any]:
    """Evaluate the spec's task files; returns lm-eval's results document (as written to OUT)."""
    from rueval.solvers.lm import LMSolver

    started = time.perf_counter()
    # a resumed run's names are checked too: its folder may have changed
    files = TaskFiles.checked(spec.task_files, spec.include_path, spec.trust_task_code, spec.confirm_run_unsafe_code)
    store = RunStore(out)
    store.check_folder()
    environment = environment_info()
    solver = spec.solver(store.out.resolve() / "finetune")
    assert isinstance(solver, LMSolver)  # RunSpec refuses task files for any other model
    settings = resolved_settings(spec, solver)
    store.claim(settings, spec.task_files, force)
    store.save_spec(settings)
    try:
        document, tasks = evaluate(spec, files, solver, environment)
    except RuevalError:
        store.withdraw()
        raise
    write_results(store, settings, document, tasks, spec, time.perf_counter() - started)
    detail(f"task files evaluated in {time.perf_counter() - started:.1f} s")
    return document


class KeepingTasks:
    """lm-eval's TaskManager for one simple_evaluate, keeping the tasks its ``load`` builds for it: their
    aggregation functions are what rueval's intervals resample with."""

    def __init__(self, manager: Any):
        self.manager = manager
        self.tasks: dict[str, Any] = {}

    def load(self, *args: Any, **kwargs: Any) -> Any:
        loaded = self.manager.load(*args, **kwargs)
        self.tasks = dict(loaded["tasks"])
        return loaded

    def __getattr__(self, name: str) -> Any:
        return getattr(self.manager, name)


def environment_info() -> Future[dict[str, Any]]:
    """What lm-eval's ``add_env_info`` adds to its results (torch's report of the machine, with pip's package
    list: half a second of commands), started now in a thread of its own, so that its commands run while
    the model loads. The libraries it reports on are imported here first: the thread then imports no module
    that this thread may be importing."""
    from lm_eval.loggers.utils import add_env_info

    for library in ("torch.utils.collect_env", "transformers"):
        try:
            import_libraries(library)
        except ImportError:  # lm-eval reports the machine without it
            pass

    def added() -> dict[str, Any]:
        info: dict[str, Any] = {}
        add_env_info(info)
        return info

    return in_background(added, "rueval-environment")


@contextmanager
def environment_given(info: Future[dict[str, Any]]) -> Iterator[None]:
    """lm-eval's simple_evaluate adds ``info``'s values to its results where it would compute them."""
    import lm_eval.evaluator

    computing = lm_eval.evaluator.add_env_info
    lm_eval.evaluator.add_env_info = lambda storage: storage.update(info.result())
    try:
        yield
    finally:
        lm_eval.evaluator.add_env_info = computing


def evaluate(
    spec: RunSpec, files: TaskFiles, solver: Any, environment: Future[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """lm-eval's simple_evaluate over rueval's engine: its results (``environment``: its add_env_info's
    values), and the tasks it built; whatever lm-eval raises about a task file (a template, its data, a
    metric) is one line."""
    import jinja2
    from lm_eval import simple_evaluate

    from rueval.models.backends.lm_eval_lm import RuevalLM

    logging.getLogger("lm_eval").setLevel(logging.WARNING)  # its per-task info lines are rueval's detail
    seeds = LM_EVAL_SEEDS if spec.seed == 0 else (spec.seed,) * 4
    manager = KeepingTasks(files.manager)
    try:
        with environment_given(environment):
            results = simple_evaluate(
                model=RuevalLM(solver.engine),
                tasks=list(spec.task_files),
                task_manager=manager,
                num_fewshot=spec.shots[0] if spec.shots else None,
                limit=spec.limit,
                log_samples=True,
                predict_only=spec.predict_only,
                confirm_run_unsafe_code=spec.confirm_run_unsafe_code,
                random_seed=seeds[0],
                numpy_random_seed=seeds[1],
                torch_random_seed=seeds[2],
                fewshot_random_seed=seeds[3],
            )
    except RuevalError:
        raise
    except jinja2.TemplateError as e:  # what the sandbox refuses when a record fills a template
        task = failing_task(e)
        where = f"{files.declaring(task) or task}: task {task}: " if task else ""
        raise RuevalError(f"{where}a template cannot be filled: {first_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - lm-eval's errors about a task file are many kinds, each the user's to fix
        raise RuevalError(f"lm-eval could not run the task files: {type(e).__name__}: {first_line(e)}") from None
    if results is None:  # lm-eval returns nothing on its non-main processes
        raise RuevalError("lm-eval returned no results")
    return results, manager.tasks


def write_results(
    store: RunStore,
    settings: dict[str, Any],
    results: dict[str, Any],
    tasks: dict[str, Any],
    spec: RunSpec,
    wall_time_s: float,
) -> None:
    """lm-eval's outputs first, OUT/results_lmeval.json (its document, made JSON as its own tracker makes it)
    and with --log-samples its sample logs, written by its own tracker; then rueval's, OUT/predictions/<task>.jsonl
    and OUT/results.json."""
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.utils import handle_non_serializable

    samples = results.pop("samples", {})
    document = json.loads(json.dumps(results, default=handle_non_serializable, ensure_ascii=False))
    store.write_lm_eval(document)  # first: the scores are kept whatever happens to the rest
    values = json.loads(json.dumps(samples, default=handle_non_serializable, ensure_ascii=False))
    if spec.log_samples:
        tracker = EvaluationTracker(output_path=str(store.out / SAMPLES_DIR / FILE_NAME))  # a file: its folder
        tracker.date_id = date_id(datetime.now())  # lm-eval's command line sets it when it writes its results
        for task, task_samples in samples.items():
            tracker.save_results_samples(task, task_samples)  # lm-eval logs a failure and goes on: checked below
            if not sample_files(store.out, task):
                raise RuevalError(f"{store.out / SAMPLES_DIR}: the sample log of {task} could not be written")
    summary, rows = task_file_results(settings, document, values, tasks, wall_time_s, spec.predict_only)
    for task, task_rows in rows.items():
        write_sample_scores(predictions_file(store.out, task), task_rows)
    summary.write(store.out)


def failing_task(error: BaseException) -> str | None:
    """The lm-eval task whose code raised ``error`` (a frame of one of its methods), if any."""
    traceback, task = error.__traceback__, None
    while traceback is not None:
        config = getattr(traceback.tb_frame.f_locals.get("self"), "config", None)
        task = getattr(config, "task", None) if isinstance(getattr(config, "task", None), str) else task
        traceback = traceback.tb_next
    return task


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0][:300]
