"""The predict stage of a run: every pending task's predictions in every few-shot setting.

A classical solver is fitted and applied task by task. A pooled solver's (a language model's)
tasks are planned first (each task, k and episode: examples -> requests), then all their requests
go to the engine in one pooled call, so identical requests and shared prefixes are computed once
across tasks, k, episodes and prompts; a task is handed on as soon as its own requests are done
(tasks are asked in order) with the solver's TaskAnswers. A task asked with several prompts (--prompts
all) carries each prompt's answers; its headline, its predictions and its sample log are the default's.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.progress import detail, progress
from rueval.data import TaskData
from rueval.models.base import Generation, Loglikelihood, Request, prompt_text
from rueval.models.distributed import world
from rueval.run.dialogue import answer_dialogues, is_dialogue
from rueval.scoring.task_scores import example_metrics, is_correct
from rueval.solvers import Setting, Solver
from rueval.solvers.base import PooledSolver, TaskAnswers, TaskPlan
from rueval.tasks import Example, Task
from rueval.tasks.prompts import TaskPrompt

# predicts lists of examples, each under a setting, in one go: what robustness asks the model
Predictor = Callable[[Sequence[tuple[Sequence[Example], Setting]]], list[list[Any]]]
Prompts = Callable[[Task], Sequence[TaskPrompt]]  # the prompts a task is asked with, the default first


def settings_of(shots: Sequence[int], episodes: int, per_item_seed: int | None = None) -> list[Setting]:
    """Every (k, episode) of a run, in order; zero-shot has one episode (nothing to draw). With
    ``per_item_seed`` each item's demonstrations are drawn in turn (MERA's), one episode."""
    if per_item_seed is not None:
        return [Setting(k, 0, per_item_seed) for k in shots]
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
    predictor: Predictor = field(kw_only=True)  # predicts more examples in the run's settings (--perturb's copies)
    protocol: str | None = None  # LMs: how the task was scored (TaskAnswers.protocol)
    unmatched_answers: int | None = None  # LMs answering choices by generating: answers that named no option
    samples: list[dict[str, Any]] = field(default_factory=list)  # the sample log, when asked for
    # a task asked with several prompts: each prompt's answers, the default's (by_setting) first
    prompt_answers: tuple[TaskAnswers, ...] = ()

    @property
    def headline(self) -> list[Any]:
        """The predictions of the first setting: those written to predictions/ and scored as the task's metrics."""
        return next(iter(self.by_setting.values()))


def predict_tasks(
    solver: Solver,
    pending: Sequence[tuple[Task, TaskData]],
    settings: Callable[[Task], Sequence[Setting]],
    log_samples: bool = False,
    prompts: Prompts | None = None,
) -> Iterator[Predicted]:
    """Each pending task's predictions in each of its ``settings`` (a language model's, asked with each of
    its ``prompts``, by default its own; a classical solver predicts once), handed on task by task in order."""
    if (pooled := solver.pooled) is not None:
        yield from _pooled(pooled, pending, settings, log_samples, prompts)
        return
    if world() is not None:
        raise RuevalError(
            f"several processes (accelerate launch) split a language model's requests: run {solver.name} as one"
        )
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
    solver: PooledSolver[Any],
    pending: Sequence[tuple[Task, TaskData]],
    settings: Callable[[Task], Sequence[Setting]],
    log_samples: bool,
    prompts: Prompts | None,
) -> Iterator[Predicted]:
    """The tasks' requests pooled; then ruTiE's dialogues, asked round by round (rueval.run.dialogue)."""
    together = [(task, data) for task, data in pending if not is_dialogue(task)]
    if together:
        yield from _pooled_together(solver, together, settings, log_samples, prompts)
    for task, data in pending:
        if is_dialogue(task):
            yield _dialogues(solver, task, data, settings(task), log_samples)


def _dialogues(
    solver: PooledSolver[Any], task: Task, data: TaskData, settings: Sequence[Setting], log_samples: bool
) -> Predicted:
    started = time.perf_counter()
    answers, computed = answer_dialogues(solver, task, _train(data), data.eval.examples, settings)

    def predictor(jobs: Sequence[tuple[Sequence[Example], Setting]]) -> list[list[Any]]:
        asked = [answer_dialogues(solver, task, _train(data), examples, [setting]) for examples, setting in jobs]
        return [answers.by_setting[setting] for (answers, _), (_, setting) in zip(asked, jobs, strict=True)]

    return Predicted(
        task,
        data,
        answers.by_setting,
        answers.normalized,
        seconds=time.perf_counter() - started,
        requests_computed=len(computed),
        predictor=predictor,
        protocol=answers.protocol,
        unmatched_answers=answers.unmatched,
        samples=exchange_samples(task, data.eval.examples, answers) if log_samples else [],
    )


def _pooled_together(
    solver: PooledSolver[Any],
    pending: Sequence[tuple[Task, TaskData]],
    settings: Callable[[Task], Sequence[Setting]],
    log_samples: bool,
    prompts: Prompts | None,
) -> Iterator[Predicted]:
    plans = {task.name: _plans(solver, task, data, settings, prompts) for task, data in pending}
    requests = {name: [r for plan in task_plans for r in plan.requests] for name, task_plans in plans.items()}
    # each distinct request belongs to the first task that asks for it, for the per-task counts
    owner: dict[Request, str] = {}
    for name, asked in requests.items():
        for request in asked:
            owner.setdefault(request, name)
    planned = sum(len(asked) for asked in requests.values())
    detail(f"{solver.name}: {planned:,} requests planned for {len(pending)} task(s), {len(owner):,} distinct")
    waiting = list(pending)
    started = time.perf_counter()
    launch, description = world(), f"{solver.name} on {len(pending)} task(s)"
    # under accelerate launch each process computes its share; the main process goes on with all results
    stream = solver.engine.stream if launch is None else partial(launch.stream, solver.engine)
    for done, computed in stream(list(owner), description):
        while waiting and all(r in done for r in requests[waiting[0][0].name]):
            task, data = waiting.pop(0)
            every = tuple(solver.answer_task(plan, done) for plan in plans[task.name])
            answers = every[0]  # the default prompt's
            yield Predicted(
                task,
                data,
                answers.by_setting,
                answers.normalized,
                seconds=time.perf_counter() - started,
                requests_computed=sum(owner[r] == task.name for r in computed),
                predictor=_pooled_predictor(solver, task, data),
                protocol=answers.protocol,
                unmatched_answers=answers.unmatched,
                samples=exchange_samples(task, data.eval.examples, answers) if log_samples else [],
                prompt_answers=every if len(every) > 1 else (),
            )
            started = time.perf_counter()


def _plans(
    solver: PooledSolver[Any],
    task: Task,
    data: TaskData,
    settings: Callable[[Task], Sequence[Setting]],
    prompts: Prompts | None,
) -> list[TaskPlan]:
    """The task's plans in every setting, one per prompt it is asked with: its own alone without
    ``prompts``, or when its split has no answers to score the others by."""
    asked: Sequence[TaskPrompt | None] = prompts(task) if prompts is not None and data.eval.labelled else [None]
    return [solver.plan_task(task, _train(data), data.eval.examples, settings(task), prompt) for prompt in asked]


def _pooled_predictor(solver: PooledSolver[Any], task: Task, data: TaskData) -> Predictor:
    def predict(jobs: Sequence[tuple[Sequence[Example], Setting]]) -> list[list[Any]]:
        plans = [solver.plan_task(task, _train(data), examples, [setting]) for examples, setting in jobs]
        requests = list(dict.fromkeys(r for plan in plans for r in plan.requests))
        results = dict(zip(requests, solver.engine.compute(requests, f"{solver.name} on {task.name}"), strict=True))
        return [
            solver.answer_task(plan, results).by_setting[setting]
            for plan, (_, setting) in zip(plans, jobs, strict=True)
        ]

    return predict


def _train(data: TaskData) -> list[Example]:
    return data.train.examples if data.train else []


# -- sample logs -------------------------------------------------------------------------------------


def exchange_samples(task: Task, examples: Sequence[Example], answers: TaskAnswers) -> list[dict[str, Any]]:
    """A pooled solver's sample log lines, setting by setting: every request each example sent and what it
    returned."""
    lines = []
    for setting, exchanges in answers.exchanges.items():
        predictions = answers.by_setting[setting]
        for doc_id, (example, sent, prediction) in enumerate(zip(examples, exchanges, predictions, strict=True)):
            responses = [
                _response(request, result) for request, result in zip(sent.requests, sent.results, strict=True)
            ]
            logged = {
                "arguments": {f"gen_args_{i}": _arguments(request) for i, request in enumerate(sent.requests)},
                "resps": [[response] for response in responses],
                "filtered_resps": [
                    response.strip() if isinstance(request, Generation) else response
                    for request, response in zip(sent.requests, responses, strict=True)
                ],
            }
            lines.append(sample_line(task, doc_id, example, prediction, setting, logged))
    return lines


def sample_line(
    task: Task, doc_id: int, example: Example, prediction: Any, setting: Setting, logged: Mapping[str, Any]
) -> dict[str, Any]:
    """One line of a sample log: lm-eval's fields, the example's own metrics (none without a gold
    answer), and rueval's."""
    doc, target = dict(example.fields), str(example.label)
    unscored = example.label is None
    metrics = {} if unscored else example_metrics(task, example.label, prediction)
    arguments: Mapping[str, Mapping[str, Any]] = logged.get("arguments", {})
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
        "correct": None if unscored else is_correct(task, example.label, prediction),
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
        return {"arg_0": prompt_text(request.prompt), "arg_1": settings}
    if not isinstance(request, Loglikelihood):  # a task's requests are log-likelihoods and generations only
        raise TypeError(f"{type(request).__name__} has no sample-log form")
    return {"arg_0": prompt_text(request.context), "arg_1": request.continuation}


def _response(request: Request, result: Any) -> Any:
    """As lm-eval writes responses: text; a log-likelihood as [log-probability, greedy]."""
    return result if isinstance(request, Generation) else [str(result.logprob), str(result.greedy)]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
