"""A run of lm-evaluation-harness task files: lm-eval's own evaluator (``simple_evaluate``) builds the
tasks (rueval.tasks.lm_eval_tasks), asks rueval's engine for every request through ``RuevalLM``
(rueval.models.backends.lm_eval_lm: shared prefixes, deduplication, the request cache), and scores the
answers with lm-eval's own code: filters, metrics, group aggregates and standard errors are lm-eval's.

The run folder holds run.json (what --resume continues: the request cache answers every request
computed before), lm-eval's results document as ``results_lmeval.json`` and, with --log-samples, its
sample logs as lm-eval writes them (``samples/samples_<task>_<date id>.jsonl``).

Seeds are lm-eval's: its defaults (0 for Python's, 1234 for numpy's, torch's and the few-shot
sampler's) unless ``--seed`` is given, which sets all four, as lm-eval's ``--seed N`` does.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from rueval import __version__
from rueval.core.errors import RuevalError
from rueval.core.progress import detail
from rueval.results.lm_eval import FILE_NAME, SAMPLES_DIR, date_id, sample_files
from rueval.run.spec import RunSpec
from rueval.run.store import RunStore
from rueval.tasks.lm_eval_tasks import TaskFiles

LM_EVAL_SEEDS = (0, 1234, 1234, 1234)  # lm-eval's random, numpy, torch and few-shot seeds by default


def run_task_files(spec: RunSpec, out: Path, force: bool = False) -> dict[str, Any]:
    """Evaluate the spec's task files; returns lm-eval's results document (as written to OUT)."""
    from rueval.solvers.lm import LMSolver

    started = time.perf_counter()
    files = TaskFiles.finding(spec.task_files, spec.include_path)
    files.check_names(spec.task_files)  # a resumed run's too: its folder may have changed
    files.check(spec.task_files, spec.trust_task_code, spec.confirm_run_unsafe_code)
    store = RunStore(out)
    store.check_folder()
    solver = spec.solver(store.out.resolve() / "finetune")
    assert isinstance(solver, LMSolver)  # RunSpec refuses task files for any other model
    settings = {**spec.to_json(), "model_identity": solver.identity, "rueval_version": __version__}
    store.claim(settings, spec.task_files, force)
    store.save_spec(settings)
    try:
        document = evaluate(spec, files, solver)
    except RuevalError:
        store.withdraw()
        raise
    write_results(store, document, spec.log_samples)
    detail(f"task files evaluated in {time.perf_counter() - started:.1f} s")
    return document


def evaluate(spec: RunSpec, files: TaskFiles, solver: Any) -> dict[str, Any]:
    """lm-eval's simple_evaluate over rueval's engine; whatever lm-eval raises about a task file (a
    template, its data, a metric) is one line."""
    import jinja2
    from lm_eval import simple_evaluate

    from rueval.models.backends.lm_eval_lm import RuevalLM

    logging.getLogger("lm_eval").setLevel(logging.WARNING)  # its per-task info lines are rueval's detail
    seeds = LM_EVAL_SEEDS if spec.seed == 0 else (spec.seed,) * 4
    try:
        results = simple_evaluate(
            model=RuevalLM(solver.engine),
            tasks=list(spec.task_files),
            task_manager=files.manager,
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
    return results


def write_results(store: RunStore, results: dict[str, Any], log_samples: bool) -> None:
    """OUT/results_lmeval.json (lm-eval's document, made JSON as lm-eval's own tracker makes it) and, with
    ``log_samples``, the sample logs, written by lm-eval's own tracker."""
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.utils import handle_non_serializable

    samples = results.pop("samples", {})
    document = json.loads(json.dumps(results, default=handle_non_serializable, ensure_ascii=False))
    store.write_lm_eval(document)  # first: the scores are kept whatever happens to the sample logs
    if log_samples:
        tracker = EvaluationTracker(output_path=str(store.out / SAMPLES_DIR / FILE_NAME))  # a file: its folder
        tracker.date_id = date_id(datetime.now())  # lm-eval's command line sets it when it writes its results
        for task, task_samples in samples.items():
            tracker.save_results_samples(task, task_samples)  # lm-eval logs a failure and goes on: checked below
            if not sample_files(store.out, task):
                raise RuevalError(f"{store.out / SAMPLES_DIR}: the sample log of {task} could not be written")


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
