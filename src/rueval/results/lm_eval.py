"""OUT/results_lmeval.json: a run's results in lm-evaluation-harness's results schema (0.4.x), so tools
that read lm-eval's results files (its `make_table`, leaderboards' parsers) read rueval's.

lm-eval's conventions, as its evaluator writes them: metrics keyed "<metric>,<filter>" with the filter
"none", values as fractions (rueval's are percentages), "<metric>_stderr,<filter>" beside each, "N/A"
where there is no standard error. rueval's bootstrap gives a 95% percentile interval, not a standard
error: the file's stderr is that interval's half-width over 1.96 (a normal approximation). A run
with several k gives one entry per further k, "<task>_<k>shot", with the mean over its episodes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rueval.results.run import RunResult, TaskResult
from rueval.tasks import get_task

FILE_NAME = "results_lmeval.json"  # lm-eval finds results files by "/results_" and ".json" in the path
FILTER = "none"  # rueval applies no lm-eval filter: its answer normalisation is the task's metric
METRIC_NAMES = {"accuracy": "acc", "em": "exact_match"}  # rueval's name -> lm-eval's where lm-eval has one
Z_95 = 1.959964


def lm_eval_results(run: RunResult) -> dict[str, Any]:
    """The lm-eval results document of ``run``."""
    settings = run.settings
    shots = settings.get("shots") or [0]
    results: dict[str, dict[str, Any]] = {}
    configs: dict[str, dict[str, Any]] = {}
    n_shot: dict[str, int] = {}
    n_samples: dict[str, dict[str, int | None]] = {}
    for name, task_result in run.tasks.items():
        for k, entry_name, metrics in _entries(name, task_result, shots):
            results[entry_name] = {"alias": entry_name, **metrics}
            configs[entry_name] = _config(name, entry_name, task_result, k, settings)
            n_shot[entry_name] = k
            n_samples[entry_name] = {
                "original": task_result.n if settings.get("limit") is None else None,
                "effective": task_result.n,
            }
    metric_names = {
        entry: [m.split(",")[0] for m in r if "," in m and "_stderr," not in m] for entry, r in results.items()
    }
    return {
        "results": results,
        "group_subtasks": {entry: [] for entry in results},
        "configs": dict(sorted(configs.items())),
        "versions": dict(sorted((entry, settings.get("rueval_version")) for entry in results)),
        "n-shot": dict(sorted(n_shot.items())),
        "higher_is_better": dict(sorted((e, dict.fromkeys(names, True)) for e, names in metric_names.items())),
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
    """(k, entry name, lm-eval metrics) per k the run scored: the task's headline k first, under its own name."""
    yield shots[0], name, _metrics(result.metrics | {"score": result.score}, result.ci, _norm(result, shots[0]))
    for k in shots[1:]:
        shot = result.shots.get(k)
        if shot is not None:
            yield k, f"{name}_{k}shot", _metrics(shot.metrics | {"score": shot.score}, {}, shot.metrics_norm)


def _norm(result: TaskResult, k: int) -> dict[str, float] | None:
    shot = result.shots.get(k)
    return shot.metrics_norm if shot is not None else None


def _metrics(values: dict[str, float], ci: dict[str, list[float]], norm: dict[str, float] | None) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for metric, value in values.items():
        name = METRIC_NAMES.get(metric, metric)
        metrics[f"{name},{FILTER}"] = value / 100
        low_high = ci.get(metric)
        metrics[f"{name}_stderr,{FILTER}"] = (low_high[1] - low_high[0]) / 100 / (2 * Z_95) if low_high else "N/A"
    if norm and "accuracy" in norm:  # loglik per byte: lm-eval's acc_norm
        metrics[f"acc_norm,{FILTER}"] = norm["accuracy"] / 100
        metrics[f"acc_norm_stderr,{FILTER}"] = "N/A"
    return metrics


def _config(name: str, entry: str, result: TaskResult, k: int, settings: dict[str, Any]) -> dict[str, Any]:
    task = get_task(name)
    return {
        "task": entry,
        "tag": [task.benchmark],
        "dataset_path": result.data.get("file") or settings.get("data"),
        "test_split": result.split,
        "num_fewshot": k,
        "metric_list": [
            {
                "metric": METRIC_NAMES.get(m, m),
                "aggregation": "mean" if m == "accuracy" else METRIC_NAMES.get(m, m),
                "higher_is_better": True,
            }
            for m in (*task.metrics, "score")
        ],
        "metadata": {"version": settings.get("rueval_version"), "description": task.description},
    }
