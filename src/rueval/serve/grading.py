"""A submission scored with rueval's own metrics, and the columns of an honest board.

Per task: the official metrics and task score (rueval.scoring.task_scores.score_task, as `rueval run` scores
the same predictions), LiDiRus' per-feature MCC, 95% bootstrap intervals (rueval.scoring.stats), the
slices that do not read the gold answer, and:

- ``versus``: the paired bootstrap test of the task score against the majority class and against
  the heuristics on the same test items (rueval.scoring.stats.paired_bootstrap): the difference, its 95%
  interval and p-value; at p >= 0.05 the score is not distinguishable from that baseline's;
- ``rules``: on the items where a heuristic rule fires, the share where the submission gives the
  rule's answer, beside the submission's score on the items where no rule fires.

The total is the mean of the task scores when the zip covers every task of the gold (on a gold
of all nine tasks, the RSG total); a partial submission has none.

The bootstrap's resamples are seeded by the board's secret and the predictions (rueval.serve.secret):
the same predictions always get the same intervals, and nobody without the secret can redo the
resamples to learn which items a submission got right. What of this the board publishes is
rueval.serve.disclosure's to say.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from statistics import fmean
from typing import Any

from rueval.results import RunResult, TaskResult
from rueval.scoring.decisions import ALPHA
from rueval.scoring.slices import slice_scores
from rueval.scoring.stats import bootstrap_ci, paired_bootstrap
from rueval.scoring.task_scores import is_correct, rsg_total, score_task
from rueval.serve.baselines import HEURISTIC, MAJORITY, RULES, Baselines
from rueval.serve.gold import Gold, GoldTask
from rueval.serve.secret import keyed_digest
from rueval.serve.upload import CheckedSubmission
from rueval.tasks import Example, Task

# TAPE's subpopulations that are read off the test items' texts, never off their answers: the
# board shows no breakdown by gold class.
SLICES = ("length", "domain", "gender", "number", "candidates")
COMPARED = (MAJORITY, HEURISTIC)


@dataclass(frozen=True)
class ScoredSubmission:
    """What the board stores of a scored submission (``tasks``: JSON-ready) and its run results (for the report)."""

    tasks: dict[str, dict[str, Any]]
    total: float | None
    run: RunResult


def score_submission(
    gold: Gold, checked: CheckedSubmission, baselines: Baselines, label: str, secret: bytes
) -> ScoredSubmission:
    tasks: dict[str, dict[str, Any]] = {}
    results: dict[str, TaskResult] = {}
    for name, predictions in checked.predictions.items():
        gold_task = gold.tasks[name]
        references = {model: baselines[model][name].predictions for model in (*COMPARED, RULES)}
        seed = bootstrap_seed(secret, name, predictions)
        results[name] = task_result(gold_task, predictions, seed)
        tasks[name] = {
            "n": results[name].n,
            "score": results[name].score,
            "metrics": results[name].metrics,
            "ci": results[name].ci,
            "breakdown": results[name].breakdown,
            **honest_columns(gold_task.task, gold_task.examples, predictions, references, seed),
        }
    scores = {name: entry["score"] for name, entry in tasks.items()}
    total = None if checked.partial else fmean(scores.values())
    run = RunResult(
        settings={"model": label, "data": "the board's gold", "limit": None, "split": "test"},
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        wall_time_s=0.0,
        rsg_total=rsg_total(scores),
        industrial={},
        tasks=results,
    )
    return ScoredSubmission(tasks, total, run)


def bootstrap_seed(secret: bytes, task: str, predictions: Sequence[Any]) -> int:
    """The seed of a task's resamples: 256 bits keyed by the secret, one per task and predictions."""
    shown = json.dumps(list(predictions), ensure_ascii=False, default=str).encode()
    return int.from_bytes(keyed_digest(secret, "bootstrap", task.encode(), shown))


def task_result(gold: GoldTask, predictions: Sequence[Any], seed: int) -> TaskResult:
    """The task's result as a run records it: metrics, breakdown, intervals and slices."""
    task, examples = gold.task, gold.examples
    scores = score_task(task, examples, predictions)
    return TaskResult(
        benchmark=task.benchmark,
        split="test",
        n=len(examples),
        score=scores.score,
        metrics=scores.metrics,
        breakdown=scores.breakdown,
        ci=bootstrap_ci(task, examples, predictions, seed=seed),
        slices=slice_scores(task, examples, predictions, SLICES),
        data={"sha256": gold.test.sha256},
    )


def honest_columns(
    task: Task,
    examples: Sequence[Example],
    predictions: Sequence[Any],
    references: Mapping[str, Sequence[Any]],
    seed: int,
) -> dict[str, Any]:
    """The paired tests against the majority class and the heuristics, and the heuristics' agreement."""
    versus = {}
    for model in COMPARED:
        difference = paired_bootstrap(task, examples, predictions, references[model], seed=seed)["score"]
        versus[model] = {
            "diff": difference.diff,
            "ci": list(difference.ci),
            "p_value": difference.p_value,
            "distinguishable": difference.p_value < ALPHA,
        }
    return {"versus": versus, "rules": rule_agreement(task, examples, predictions, references[RULES])}


def rule_agreement(
    task: Task, examples: Sequence[Example], predictions: Sequence[Any], rules: Sequence[Any]
) -> dict[str, Any]:
    """Where a rule fires (``rules[i]`` not None): how many items, and the share (x100) where the
    submission answers as the rule does; where none fires: how many, and the submission's score there."""
    fired = [i for i, rule in enumerate(rules) if rule is not None]
    unfired = [i for i, rule in enumerate(rules) if rule is None]
    agreeing = sum(_same_answer(task, predictions[i], rules[i]) for i in fired)
    unfired_score = None
    if unfired:
        unfired_score = score_task(task, [examples[i] for i in unfired], [predictions[i] for i in unfired]).score
    return {
        "fired": len(fired),
        "agreement": 100 * agreeing / len(fired) if fired else None,
        "unfired": len(unfired),
        "unfired_score": unfired_score,
    }


def _same_answer(task: Task, prediction: Any, rule: Any) -> bool:
    """Whether the submission gives the rule's answer (a span task's after its normalisation)."""
    return is_correct(task, (rule,) if task.kind == "span" else rule, prediction)
