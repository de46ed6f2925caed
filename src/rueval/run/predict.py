"""The predict stage of a run: every pending task's predictions in every few-shot setting.

A classical solver is fitted and applied task by task. A language model's tasks are planned first
(each task, k and episode: examples -> requests), then all their requests go to the engine in one
pooled call, so identical requests and shared prefixes are computed once across tasks, k and
episodes; a task is handed on as soon as its own requests are done (tasks are asked in order).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rueval.data import TaskData
from rueval.errors import RuevalError
from rueval.models.base import Request
from rueval.progress import progress
from rueval.solvers import Setting, Solver
from rueval.solvers.lm import LMSolver, Plan
from rueval.tasks import Example, Task

# predicts lists of examples, each under a setting, in one go: what robustness asks the model
Predictor = Callable[[Sequence[tuple[Sequence[Example], Setting]]], list[list[Any]]]


def settings_of(shots: Sequence[int], episodes: int) -> list[Setting]:
    """Every (k, episode) of a run, in order; zero-shot has one episode (nothing to draw)."""
    return [Setting(k, episode) for k in shots for episode in range(episodes if k else 1)]


@dataclass
class Predicted:
    """One task's predictions: per setting, and with loglik scoring per-byte normalised (acc_norm)."""

    task: Task
    data: TaskData
    by_setting: dict[Setting, list[Any]]
    normalized: dict[Setting, list[Any]] = field(default_factory=dict)
    seconds: float = 0.0  # fitting and predicting; for a pooled LM run, the time until the task's requests were done
    requests_computed: int | None = None  # LMs: requests the model computed for this task (the rest were cached)
    predictor: Predictor | None = None

    @property
    def headline(self) -> list[Any]:
        """The predictions of the first setting: those written to predictions/ and scored as the task's metrics."""
        return next(iter(self.by_setting.values()))


def predict_tasks(
    solver: Solver, pending: Sequence[tuple[Task, TaskData]], settings: Sequence[Setting]
) -> Iterator[Predicted]:
    if isinstance(solver, LMSolver):
        yield from _pooled(solver, pending, settings)
        return
    if list(settings) != [Setting()]:
        raise RuevalError("--shots and --episodes need a language model (-m hf:... or -m openai:...)")
    for task, data in pending:
        started = time.perf_counter()
        solver.fit(task, data.train.examples if data.train else [])
        examples = data.eval.examples
        predictions = solver.predict(task, progress(examples, f"{solver.name} on {task.name}", total=len(examples)))
        seconds = time.perf_counter() - started

        def predictor(jobs: Sequence[tuple[Sequence[Example], Setting]], task: Task = task) -> list[list[Any]]:
            return [solver.predict(task, examples) for examples, _ in jobs]  # fitted on this task just now

        yield Predicted(task, data, {Setting(): predictions}, seconds=seconds, predictor=predictor)


def _pooled(
    solver: LMSolver, pending: Sequence[tuple[Task, TaskData]], settings: Sequence[Setting]
) -> Iterator[Predicted]:
    plans = {
        task.name: [solver.plan(task, _train(data), data.eval.examples, setting) for setting in settings]
        for task, data in pending
    }
    # each distinct request belongs to the first task that asks for it, for the per-task counts
    owner: dict[Request, str] = {}
    for name, task_plans in plans.items():
        for plan in task_plans:
            for request in plan.requests:
                owner.setdefault(request, name)
    waiting = list(pending)
    started = time.perf_counter()
    for done, computed in solver.engine.stream(list(owner), f"{solver.name} on {len(pending)} task(s)"):
        while waiting and all(r in done for plan in plans[waiting[0][0].name] for r in plan.requests):
            task, data = waiting.pop(0)
            task_plans = plans[task.name]
            yield Predicted(
                task,
                data,
                {plan.setting: solver.answer(plan, done) for plan in task_plans},
                {
                    plan.setting: solver.answer(plan, done, normalize=True)
                    for plan in task_plans
                    if _normalizes(solver, plan)
                },
                seconds=time.perf_counter() - started,
                requests_computed=sum(owner[r] == task.name for r in computed),
                predictor=_lm_predictor(solver, task, data),
            )
            started = time.perf_counter()


def _normalizes(solver: LMSolver, plan: Plan) -> bool:
    """Log-likelihood scoring of options is also read per byte (lm-eval's acc_norm)."""
    return solver.scoring == "loglik" and plan.picks_options


def _lm_predictor(solver: LMSolver, task: Task, data: TaskData) -> Predictor:
    def predict(jobs: Sequence[tuple[Sequence[Example], Setting]]) -> list[list[Any]]:
        plans = [solver.plan(task, _train(data), examples, setting) for examples, setting in jobs]
        requests = list(dict.fromkeys(r for plan in plans for r in plan.requests))
        results = dict(zip(requests, solver.engine.compute(requests, f"{solver.name} on {task.name}"), strict=True))
        return [solver.answer(plan, results) for plan in plans]

    return predict


def _train(data: TaskData) -> list[Example]:
    return data.train.examples if data.train else []
