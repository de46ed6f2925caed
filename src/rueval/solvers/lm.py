"""A language model as a solver, in two visible steps: examples -> requests (``plan``), then the
requests' results -> predictions (``answer``). A run plans every task, k and episode first and
computes all their requests in one engine call, so the prefix tree shares across all of them.

Options are scored by log-likelihood (`loglik`, lm-evaluation-harness style: the continuation's
summed log-probability, or per byte when ``normalize``, lm-eval's acc_norm) or by perplexity
(`ppl`, TAPE's Equation 1: the whole prompt's mean log-probability per token). Open answers are
generated with nucleus sampling, top_p 0.8, as TAPE does (Section 5.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rueval.fewshot import episode_demos
from rueval.models.base import Generation, Loglikelihood, Request
from rueval.models.engine import Engine
from rueval.solvers.base import ModelSize, Setting, Solver
from rueval.tasks import Example, Task
from rueval.tasks.prompts import get_prompt
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Question

SCORINGS = ("loglik", "ppl")
TAPE_TOP_P = 0.8


@dataclass(frozen=True)
class Asked:
    """One question of one example, with its full context (the setting's demonstrations, then it)
    and the requests that answer it: one per option, or one generation."""

    question: Question
    context: str
    requests: tuple[Request, ...]


@dataclass(frozen=True)
class Plan:
    """What one task's examples ask of the model in one few-shot setting."""

    task: Task
    setting: Setting
    examples: list[Example]
    asked: list[list[Asked]]  # per example, per question

    @property
    def requests(self) -> list[Request]:
        return [request for per_example in self.asked for asked in per_example for request in asked.requests]

    @property
    def picks_options(self) -> bool:
        """Whether the task's answers are chosen among options (not generated)."""
        return any(asked.question.choices for per_example in self.asked for asked in per_example)


class LMSolver(Solver):
    def __init__(self, engine: Engine, name: str, scoring: str = "loglik", seed: int = 0):
        if scoring not in SCORINGS:
            raise ValueError(f"unknown scoring {scoring!r}")
        self.engine, self.name, self.scoring, self.seed = engine, name, scoring, seed
        self._train: dict[str, Sequence[Example]] = {}

    @property
    def identity(self) -> str:
        return self.engine.model.identity

    def size(self) -> ModelSize | None:
        parameters = getattr(self.engine.model, "parameters", None)
        return ModelSize(parameters=parameters()) if callable(parameters) else None

    # -- the two steps ---------------------------------------------------------------------------
    def plan(self, task: Task, train: Sequence[Example], examples: Sequence[Example], setting: Setting) -> Plan:
        """The requests that answer ``examples`` with the setting's demonstrations drawn from ``train``."""
        prompt = get_prompt(task)
        demos = episode_demos(train, setting.k, setting.episode, self.seed, task.name)
        demo_questions = [prompt.questions(demo) for demo in demos]
        budget = prompt.max_new_tokens[0 if setting.k == 0 else 1]
        asked = []
        for example in examples:
            per_example = []
            for i, question in enumerate(prompt.questions(example)):
                shown = [d[i].context + d[i].target for d in demo_questions if d[i].target is not None]
                context = DEMO_SEPARATOR.join([*shown, question.context])
                if question.choices:
                    requests = tuple(self._loglikelihood(context, choice.continuation) for choice in question.choices)
                else:
                    sampled = {"top_p": TAPE_TOP_P, "temperature": 1.0, "seed": self.seed}
                    requests = (Generation(context, budget, prompt.stop, **sampled),)
                per_example.append(Asked(question, context, requests))
            asked.append(per_example)
        return Plan(task, setting, list(examples), asked)

    def answer(self, plan: Plan, results: Mapping[Request, Any], normalize: bool = False) -> list[Any]:
        """The predictions the requests' results give; ``normalize``: options by log-likelihood per byte."""
        prompt = get_prompt(plan.task)
        predictions = []
        for example, per_example in zip(plan.examples, plan.asked, strict=True):
            answers = [
                self._best(asked, [results[r] for r in asked.requests], normalize)
                if asked.question.choices
                else results[asked.requests[0]].strip()
                for asked in per_example
            ]
            predictions.append(prompt.prediction(example, answers))
        return predictions

    # -- the Solver interface: zero-shot -----------------------------------------------------------
    def fit(self, task: Task, train: Sequence[Example]) -> None:
        self._train[task.name] = train  # demonstrations come from here when a setting asks for them

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        plan = self.plan(task, self._train.get(task.name, ()), list(examples), Setting())
        requests = plan.requests
        return self.answer(plan, dict(zip(requests, self.engine.compute(requests, f"{self.name} on {task.name}"))))

    # -- helpers ---------------------------------------------------------------------------------
    def _loglikelihood(self, context: str, continuation: str) -> Loglikelihood:
        if self.scoring == "ppl":
            return Loglikelihood("", context + continuation)
        return Loglikelihood(context, continuation)

    def _best(self, asked: Asked, results: list, normalize: bool) -> Any:
        def value(pair) -> float:
            choice, result = pair
            if self.scoring == "ppl":
                return result.logprob / result.n_tokens
            if normalize:
                return result.logprob / max(1, len(choice.continuation.encode()))
            return result.logprob

        return max(zip(asked.question.choices, results, strict=True), key=value)[0].label
