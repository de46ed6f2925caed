"""The reference models on the gold at hand, computed once per gold and stored: the majority class
and the heuristics of Iazykova et al. (2021) with their majority fallback, each fitted on the
task's train split exactly as `rueval run -m majority` and `-m heuristic` fit them, and the
heuristics' rules alone (where no rule fires: null). Submissions are compared with these
predictions on the same test items (rueval.serve.grading).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from rueval.core.progress import step
from rueval.scoring.task_scores import score_task
from rueval.serve.db import Database, Reference
from rueval.serve.gold import Gold, GoldTask
from rueval.solvers.heuristics import HeuristicSolver, first_prediction
from rueval.solvers.heuristics.base import memoized_texts
from rueval.solvers.trivial import TrivialSolver

MAJORITY, HEURISTIC, RULES = "majority", "heuristic", "rules"
# The computed rows' names on the board, after the heuristics paper's Table 8.
TITLES = {MAJORITY: "Majority (on this gold)", HEURISTIC: "Heuristics + majority (on this gold)"}


@dataclass(frozen=True)
class Baseline:
    """One reference model's predictions on one task's test items, and its metrics (x100) there."""

    predictions: list[Any]
    metrics: dict[str, float]
    score: float | None


Baselines = dict[str, dict[str, Baseline]]  # name -> task -> predictions


def compute(gold: GoldTask) -> dict[str, Baseline]:
    """The reference models' predictions on one task of the gold."""
    task, examples = gold.task, gold.examples
    train = gold.train.examples if gold.train else []
    majority, heuristic = TrivialSolver(MAJORITY, seed=0), HeuristicSolver(seed=0)  # -m majority, -m heuristic
    majority.fit(task, train)
    heuristic.fit(task, train)
    predicted = {MAJORITY: majority.predict(task, examples), HEURISTIC: heuristic.predict(task, examples)}
    with memoized_texts():
        rules = [first_prediction(heuristic.rules, example) for example in examples]
    found = {name: Baseline(p, (s := score_task(task, examples, p)).metrics, s.score) for name, p in predicted.items()}
    return {**found, RULES: Baseline(rules, {}, None)}


def ensure(db: Database, gold: Gold) -> Baselines:
    """The stored reference predictions for this gold, computed and stored first where missing. Two
    processes starting together may both compute a task: the second one's rows are dropped."""
    stored = load(db, gold)
    for name, gold_task in gold.tasks.items():
        if all(name in stored.get(model, {}) for model in (MAJORITY, HEURISTIC, RULES)):
            continue
        with step(f"reference models on {name}'s gold ({len(gold_task.examples):,} test items)"):
            computed = compute(gold_task)
        try:
            with db.session() as session:
                for model, baseline in computed.items():
                    session.add(_row(gold.fingerprint, model, name, baseline))
        except IntegrityError:
            pass  # stored meanwhile by another process
        for model, baseline in computed.items():
            stored.setdefault(model, {})[name] = baseline
    return stored


def load(db: Database, gold: Gold) -> Baselines:
    stored: Baselines = {}
    with db.session(read_only=True) as session:
        for row in session.scalars(select(Reference).where(Reference.gold == gold.fingerprint)):
            predictions = [_tupled(p) for p in json.loads(row.predictions.decode("utf-8"))]
            stored.setdefault(row.name, {})[row.task] = Baseline(predictions, json.loads(row.metrics), row.score)
    return stored


def _row(gold: str, model: str, task: str, baseline: Baseline) -> Reference:
    data = json.dumps(baseline.predictions, ensure_ascii=False).encode("utf-8")
    metrics = json.dumps(baseline.metrics)
    return Reference(gold=gold, name=model, task=task, predictions=data, metrics=metrics, score=baseline.score)


def _tupled(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
