"""OUT/results_lmeval.json: a run's results in lm-evaluation-harness's results schema (0.4.x), so tools
that read lm-eval's results files (its `make_table`, leaderboards' parsers) read rueval's.

lm-eval's conventions, as its evaluator writes them: metrics keyed "<metric>,<filter>" with the filter
"none", values as fractions (rueval's are percentages), "<metric>_stderr,<filter>" beside each, "N/A"
where there is no standard error. rueval's bootstrap gives a 95% percentile interval, not a standard
error: the file's stderr is that interval's half-width over 1.96 (a normal approximation). A run
with several k gives one entry per further k, "<task>_<k>shot", with the mean over its episodes.
Each metric goes under its lm-eval name from the registry (rueval.scoring.metrics: accuracy is "acc").
A task's config lists as its ``metric_list`` the metrics its sample log's lines carry (lm-eval's
WandbLogger reads each of them from every line), and its ``output_type``: ``generate_until`` for
answers generated, else ``multiple_choice``.

Sample logs are named as lm-eval names them, ``OUT/samples/samples_<task>_<date id>.jsonl`` (the
date id is lm-eval's ISO time with "-" for ":"), so that its ``get_sample_results_filenames``
finds them and ``get_file_task_name`` reads the task back (what lies between the first and the
last "_").
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from rueval.results.run import RunResult, TaskResult
from rueval.scoring.metrics import ACCURACY, Metric, metric
from rueval.scoring.task_scores import example_metric_names
from rueval.tasks import get_task

FILE_NAME = "results_lmeval.json"  # lm-eval finds results files by "/results_" and ".json" in the path
FILTER = "none"  # rueval applies no lm-eval filter: its answer normalisation is the task's metric
SCORE = "score"  # the task score, the mean of its metrics: not a metric of its own, exported under its name
ACCURACY_NORM = "acc_norm"  # lm-eval's accuracy of the options' log-likelihoods per byte
Z_95 = 1.959964
SAMPLES_DIR = "samples"


def date_id(written: datetime) -> str:
    """The time in lm-eval's file names: ISO 8601 with ``-`` for ``:``."""
    return written.isoformat().replace(":", "-")


def sample_file(folder: Path, task: str, written: datetime) -> Path:
    """Where a run writes a task's sample log, named as lm-eval names its own."""
    return folder / SAMPLES_DIR / f"samples_{task}_{date_id(written)}.jsonl"


def results_file(named: Path, written: datetime) -> Path:
    """lm-eval's results file for ``--output_path FILE.json``: FILE_<date id>.json in FILE's folder."""
    return named.with_name(f"{named.stem}_{date_id(written)}.json")


def sample_files(folder: Path, task: str) -> list[Path]:
    """A run folder's sample logs of ``task``, oldest first (not another task's whose name ``task`` begins)."""
    name = re.compile(rf"samples_{re.escape(task)}_[^_]+\.jsonl")
    return sorted(p for p in (folder / SAMPLES_DIR).glob(f"samples_{task}_*.jsonl") if name.fullmatch(p.name))


def lm_eval_results(run: RunResult) -> dict[str, Any]:
    """The lm-eval results document of ``run``."""
    settings = run.settings
    shots = settings.get("shots") or [0]
    results: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, Any]] = {}
    n_shot: dict[str, int] = {}
    n_samples: dict[str, dict[str, int | None]] = {}
    higher_is_better: dict[str, dict[str, bool]] = {}
    for name, task_result in run.tasks.items():
        for k, entry_name, (metrics, higher) in _entries(name, task_result, shots):
            results[entry_name] = {"alias": entry_name, **metrics}
            higher_is_better[entry_name] = higher
            configs[entry_name] = _config(name, entry_name, task_result, k, settings)
            n_shot[entry_name] = k
            n_samples[entry_name] = {
                "original": task_result.n if settings.get("limit") is None else None,
                "effective": task_result.n,
            }
    return {
        "results": results,
        "group_subtasks": {entry: [] for entry in results},
        "configs": dict(sorted(configs.items())),
        "versions": dict(sorted((entry, settings.get("rueval_version")) for entry in results)),
        "n-shot": dict(sorted(n_shot.items())),
        "higher_is_better": dict(sorted(higher_is_better.items())),
        "n-samples": n_samples,
        "config": {
            "model": settings.get("model"),
            "model_args": settings.get("solver_options") or {},
            "model_identity": settings.get("model_identity"),
            "batch_size": (settings.get("solver_options") or {}).get("batch_size"),
            "device": (settings.get("solver_options") or {}).get("device"),
            "limit": settings.get("limit"),
            "gen_kwargs": (settings.get("solver_options") or {}).get("gen_kwargs"),
            "random_seed": settings.get("seed"),
            "fewshot_seed": settings.get("seed"),
        },
        "date": datetime.fromisoformat(run.created).timestamp() if run.created else None,
        "model_name": settings.get("model"),
        "rueval_version": settings.get("rueval_version"),
        "total_evaluation_time_seconds": str(run.wall_time_s),
    }


def _entries(name: str, result: TaskResult, shots: list[int]):
    """(k, entry name, (lm-eval metrics, higher_is_better)) per k the run scored: the task's headline k first,
    under its own name."""
    score = {} if result.score is None else {SCORE: result.score}  # a run's tasks are scored ones
    yield shots[0], name, _metrics(result.metrics | score, result.ci, _norm(result, shots[0]))
    for k in shots[1:]:
        shot = result.shots.get(k)
        if shot is not None:
            yield k, f"{name}_{k}shot", _metrics(shot.metrics | {SCORE: shot.score}, {}, shot.metrics_norm)


def _norm(result: TaskResult, k: int) -> dict[str, float] | None:
    shot = result.shots.get(k)
    return shot.metrics_norm if shot is not None else None


def _metrics(
    values: dict[str, float], ci: dict[str, list[float]], norm: dict[str, float] | None
) -> tuple[dict[str, Any], dict[str, bool]]:
    """An entry's metrics as lm-eval writes them, and lm-eval's higher_is_better for each."""
    metrics: dict[str, Any] = {}
    higher: dict[str, bool] = {}
    for name, value in values.items():
        lm_name, higher_is_better = (SCORE, True) if name == SCORE else _lm_eval(metric(name))
        metrics[f"{lm_name},{FILTER}"] = value / 100
        low_high = ci.get(name)
        metrics[f"{lm_name}_stderr,{FILTER}"] = (low_high[1] - low_high[0]) / 100 / (2 * Z_95) if low_high else "N/A"
        higher[lm_name] = higher_is_better
    if norm and ACCURACY.name in norm:  # loglik per byte: lm-eval's acc_norm
        metrics[f"{ACCURACY_NORM},{FILTER}"] = norm[ACCURACY.name] / 100
        metrics[f"{ACCURACY_NORM}_stderr,{FILTER}"] = "N/A"
        higher[ACCURACY_NORM] = ACCURACY.higher_is_better
    return metrics, higher


def _lm_eval(m: Metric) -> tuple[str, bool]:
    return m.lm_eval_name, m.higher_is_better


def _config(name: str, entry: str, result: TaskResult, k: int, settings: dict[str, Any]) -> dict[str, Any]:
    task = get_task(name)
    return {
        "task": entry,
        "tag": [task.benchmark],
        "dataset_path": result.data.get("file") or settings.get("data"),
        "test_split": result.split,
        "num_fewshot": k,
        "output_type": "generate_until" if (result.protocol or "").startswith("generate") else "multiple_choice",
        "metric_list": [_metric_config(name) for name in example_metric_names(task)],
        "metadata": {"version": settings.get("rueval_version"), "description": task.description},
    }


def _metric_config(name: str) -> dict[str, Any]:
    """A metric of the sample lines as lm-eval's task configs list it: a mean over examples."""
    m = metric(name)
    return {"metric": m.lm_eval_name, "aggregation": "mean", "higher_is_better": m.higher_is_better}
