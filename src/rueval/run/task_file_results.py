"""rueval's results of a task-file run (OUT/results.json and OUT/predictions/<task>.jsonl), made from what
lm-eval's simple_evaluate returned: its scores as they are, and rueval's intervals from its per-sample values.

- A task is each leaf task lm-eval scored, and each group lm-eval aggregated (a group without an aggregate
  is no task), with benchmark "lm-eval". A group lists its tasks (``subtasks``) and has no interval.
- A metric is named as lm-eval names it, with its filter where the filter is not "none" ("acc",
  "exact_match,strict-match"), and is lm-eval's number x100 (rueval's scale); the task's score is its first.
- Its interval is rueval's percentile bootstrap (rueval.scoring.stats) over lm-eval's per-sample values:
  their mean for a mean, else the task's own aggregation function (lm-eval's F1, MCC, BLEU) applied to
  each resample. Seeded with the run's seed, as rueval's own tasks are.
- Per document: its doc_id, filtered responses, target and per-sample values (rueval.results.task_files),
  what `rueval compare` pairs two runs by; written whether or not lm-eval's sample logs are.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from rueval.results import LM_EVAL, RunResult, SampleScores, TaskResult
from rueval.scoring.stats import item_bootstrap_ci
from rueval.tasks.lm_eval_tasks import aggregation_name

NO_FILTER = "none"
STDERR = "_stderr"


def task_file_results(
    settings: Mapping[str, Any],
    document: Mapping[str, Any],
    samples: Mapping[str, list[dict[str, Any]]],
    tasks: Mapping[str, Any],
    wall_time_s: float,
    predict_only: bool,
) -> tuple[RunResult, dict[str, list[SampleScores]]]:
    """The run's results and each leaf task's rows. ``document``: lm-eval's results as written (JSON);
    ``samples`` its per-sample records as simple_evaluate returned them; ``tasks`` the tasks it built."""
    seed = int(settings.get("seed") or 0)
    results: dict[str, TaskResult] = {}
    rows: dict[str, list[SampleScores]] = {}
    for name, entry in document["results"].items():
        metrics = _metrics(entry)
        if name in samples:
            task_samples = samples[name]
            results[name] = _task(name, document, metrics, task_samples, tasks[name], seed, predict_only)
            rows[name] = _rows(task_samples, {} if predict_only else metrics)
        elif metrics and not predict_only:  # a group lm-eval aggregated
            leaves = _leaves(name, document["group_subtasks"])
            n = sum(document["n-samples"][leaf]["effective"] for leaf in leaves if leaf in document["n-samples"])
            scores = {named: 100 * entry[key] for named, (key, _, _) in metrics.items()}
            results[name] = TaskResult(LM_EVAL, "", n, next(iter(scores.values())), scores, subtasks=leaves)
    folders = ", ".join(settings.get("include_path") or [])
    summary = RunResult(
        settings={
            **{key: value for key, value in settings.items() if key != "tasks"},
            "data": f"task files in {folders}" if folders else "lm-eval's own task files",
        },
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        wall_time_s=wall_time_s,
        rsg_total=None,
        industrial={},
        tasks={name: result for name, result in results.items() if result.score is not None},
        predicted={name: result for name, result in results.items() if result.score is None},
        notes=["task files: lm-eval's metrics x100; a task's score is its first metric"],
    )
    return summary, rows


def _metrics(entry: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    """The entry's metrics with a number: rueval's name -> (lm-eval's key, metric, filter), in lm-eval's order."""
    found = {}
    for key, value in entry.items():
        metric, _, filter_name = key.partition(",")
        if filter_name and not metric.endswith(STDERR) and _is_number(value):
            found[metric if filter_name == NO_FILTER else key] = (key, metric, filter_name)
    return found


def _task(
    name: str,
    document: Mapping[str, Any],
    metrics: Mapping[str, tuple[str, str, str]],
    samples: list[dict[str, Any]],
    task: Any,
    seed: int,
    predict_only: bool,
) -> TaskResult:
    from lm_eval.api.metrics import mean

    config, counts = document["configs"].get(name, {}), document["n-samples"].get(name, {})
    entry = document["results"][name]
    scores = {} if predict_only else {named: 100 * entry[key] for named, (key, _, _) in metrics.items()}
    functions = {named: task.aggregation().get(metric, mean) for named, (_, metric, _) in metrics.items()}
    ci = {}
    for named, (_, metric, filter_name) in metrics.items():
        if scores:
            values = [sample[metric] for sample in _by_doc(samples) if sample["filter"] == filter_name]
            function = functions[named]
            ci[named] = item_bootstrap_ci(values, None if function is mean else function, name, seed=seed)
    first = next(iter(scores), None)
    return TaskResult(
        benchmark=LM_EVAL,
        split=config.get("test_split") or config.get("validation_split") or "",
        n=int(counts.get("effective", len(samples))),
        records=counts.get("original"),
        score=scores[first] if first else None,
        metrics=scores,
        ci={**ci, "score": ci[first]} if first in ci else ci,
        protocol=config.get("output_type"),
        data={key: config[key] for key in ("dataset_path", "dataset_name") if config.get(key)},
        aggregation={} if predict_only else {named: aggregation_name(f) for named, f in functions.items()},
    )


def _rows(samples: list[dict[str, Any]], metrics: Mapping[str, tuple[str, str, str]]) -> list[SampleScores]:
    """One row per document: its filtered responses per filter and its per-sample values per metric."""
    documents: dict[int, dict[str, Any]] = {}
    for sample in _by_doc(samples):
        row = documents.setdefault(sample["doc_id"], {"gold": sample["target"], "prediction": {}, "values": {}})
        row["prediction"][sample["filter"]] = sample["filtered_resps"]
        for named, (_, metric, filter_name) in metrics.items():
            if filter_name == sample["filter"] and metric in sample:
                row["values"][named] = sample[metric]
    return [SampleScores(doc, row["prediction"], row["gold"], row["values"]) for doc, row in documents.items()]


def _by_doc(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """lm-eval's per-sample records in doc_id order (what its ranks gathered may interleave)."""
    return sorted(samples, key=lambda sample: sample["doc_id"])


def _leaves(group: str, subtasks: Mapping[str, list[str]]) -> list[str]:
    """A group's leaf tasks, through its subgroups, in lm-eval's order."""
    return [leaf for child in subtasks.get(group, []) for leaf in (_leaves(child, subtasks) or [child])]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
