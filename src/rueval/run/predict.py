"""The predict stage of a run: every pending task's predictions in every few-shot setting.

A classical solver is fitted and applied task by task. A language model's tasks are planned first
(each task, k and episode: examples -> requests), then all their requests go to the engine in one
pooled call, so identical requests and shared prefixes are computed once across tasks, k and
episodes; a task is handed on as soon as its own requests are done (tasks are asked in order).
Under accelerate launch each process computes a share of them (rueval.models.distributed).

With ``log_samples`` each task also carries its sample log: one line per example per setting, in
the shape lm-evaluation-harness 0.4's samples_<task>.jsonl has (its EvaluationTracker's writer:
arguments as gen_args_i.arg_j, responses as text), plus rueval's k, episode, idx, prediction and
whether it is correct.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rueval.data import TaskData
from rueval.errors import RuevalError
from rueval.models.base import Generation, Request
from rueval.models.distributed import world
from rueval.progress import detail, progress
from rueval.scoring import example_metrics, is_correct
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
    protocol: str | None = None  # LMs: how the task was scored (LMSolver.protocol)
    unmatched_answers: int | None = None  # LMs answering choices by generating: answers that named no option
    samples: list[dict[str, Any]] = field(default_factory=list)  # the sample log, when asked for

    @property
    def headline(self) -> list[Any]:
        """The predictions of the first setting: those written to predictions/ and scored as the task's metrics."""
        return next(iter(self.by_setting.values()))


def predict_tasks(
    solver: Solver, pending: Sequence[tuple[Task, TaskData]], settings: Sequence[Setting], log_samples: bool = False
) -> Iterator[Predicted]:
    if isinstance(solver, LMSolver):
        yield from _pooled(solver, pending, settings, log_samples)
        return
    if world() is not None:
        raise RuevalError(
            f"several processes (accelerate launch) split a language model's requests: run {solver.name} as one"
        )
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

        samples = []
        if log_samples:
            samples = [
                sample_line(task, doc_id, example, prediction, Setting(), {"filtered_resps": [prediction]})
                for doc_id, (example, prediction) in enumerate(zip(examples, predictions, strict=True))
            ]
        yield Predicted(task, data, {Setting(): predictions}, seconds=seconds, predictor=predictor, samples=samples)


def _pooled(
    solver: LMSolver, pending: Sequence[tuple[Task, TaskData]], settings: Sequence[Setting], log_samples: bool
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
    planned = sum(len(plan.requests) for task_plans in plans.values() for plan in task_plans)
    detail(f"{solver.name}: {planned:,} requests planned for {len(pending)} task(s), {len(owner):,} distinct")
    waiting = list(pending)
    started = time.perf_counter()
    launch, description = world(), f"{solver.name} on {len(pending)} task(s)"
    # under accelerate launch each process computes its share; the main process goes on with all results
    stream = solver.engine.stream if launch is None else partial(launch.stream, solver.engine)
    for done, computed in stream(list(owner), description):
        while waiting and all(r in done for plan in plans[waiting[0][0].name] for r in plan.requests):
            task, data = waiting.pop(0)
            task_plans = plans[task.name]
            by_setting = {plan.setting: solver.answer(plan, done) for plan in task_plans}
            yield Predicted(
                task,
                data,
                by_setting,
                {
                    plan.setting: solver.answer(plan, done, normalize=True)
                    for plan in task_plans
                    if _normalizes(solver, plan)
                },
                seconds=time.perf_counter() - started,
                requests_computed=sum(owner[r] == task.name for r in computed),
                predictor=_lm_predictor(solver, task, data),
                protocol=solver.protocol(task_plans[0]),
                unmatched_answers=_sum_or_none(solver.unmatched(plan, done) for plan in task_plans),
                samples=[line for plan in task_plans for line in lm_samples(plan, done, by_setting[plan.setting])]
                if log_samples
                else [],
            )
            started = time.perf_counter()


def _sum_or_none(counts: Iterable[int | None]) -> int | None:
    values = [count for count in counts if count is not None]
    return sum(values) if values else None


def _normalizes(solver: LMSolver, plan: Plan) -> bool:
    """Log-likelihood scoring of options is also read per byte (lm-eval's acc_norm)."""
    return solver.scoring == "loglik" and plan.picks_options and not solver.generates_choices


def _lm_predictor(solver: LMSolver, task: Task, data: TaskData) -> Predictor:
    def predict(jobs: Sequence[tuple[Sequence[Example], Setting]]) -> list[list[Any]]:
        plans = [solver.plan(task, _train(data), examples, setting) for examples, setting in jobs]
        requests = list(dict.fromkeys(r for plan in plans for r in plan.requests))
        results = dict(zip(requests, solver.engine.compute(requests, f"{solver.name} on {task.name}"), strict=True))
        return [solver.answer(plan, results) for plan in plans]

    return predict


def _train(data: TaskData) -> list[Example]:
    return data.train.examples if data.train else []


# -- sample logs -------------------------------------------------------------------------------------


def lm_samples(plan: Plan, results: Mapping[Request, Any], predictions: Sequence[Any]) -> list[dict[str, Any]]:
    """A language model's sample log lines for one plan: every request sent and what it returned."""
    lines = []
    for doc_id, (example, per_example, prediction) in enumerate(zip(plan.examples, plan.asked, predictions)):
        requests = [request for asked in per_example for request in asked.requests]
        responses = [_response(request, results[request]) for request in requests]
        logged = {
            "arguments": {f"gen_args_{i}": _arguments(request) for i, request in enumerate(requests)},
            "resps": [[response] for response in responses],
            "filtered_resps": [
                response.strip() if isinstance(request, Generation) else response
                for request, response in zip(requests, responses)
            ],
        }
        lines.append(sample_line(plan.task, doc_id, example, prediction, plan.setting, logged))
    return lines


def sample_line(
    task: Task, doc_id: int, example: Example, prediction: Any, setting: Setting, logged: Mapping[str, Any]
) -> dict[str, Any]:
    """One line of a sample log: lm-eval's fields, the example's own metrics, and rueval's."""
    doc, target = dict(example.fields), str(example.label)
    metrics = example_metrics(task, example.label, prediction)
    arguments = logged.get("arguments", {})
    first_prompt = next(iter(arguments.values()), {}).get("arg_0", "")
    return {
        "doc_id": doc_id,
        "doc": doc,
        "target": target,
        **logged,
        "filter": "none",
        "metrics": list(metrics),
        "doc_hash": _hash(json.dumps(doc, indent=2, ensure_ascii=False, default=str)),
        "prompt_hash": _hash(first_prompt),
        "target_hash": _hash(target),
        **metrics,
        "k": setting.k,
        "episode": setting.episode,
        "idx": example.idx,
        "prediction": prediction,
        "correct": is_correct(task, example.label, prediction),
    }


def _arguments(request: Request) -> dict[str, Any]:
    if isinstance(request, Generation):
        settings = {
            "until": list(request.stop),
            "max_gen_toks": request.max_new_tokens,
            "do_sample": request.top_p < 1.0 or request.temperature > 0,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "seed": request.seed,
        }
        return {"arg_0": request.prompt, "arg_1": settings}
    return {"arg_0": request.context, "arg_1": request.continuation}


def _response(request: Request, result: Any) -> Any:
    """As lm-eval writes responses: text; a log-likelihood as [log-probability, greedy]."""
    return result if isinstance(request, Generation) else [str(result.logprob), str(result.greedy)]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
