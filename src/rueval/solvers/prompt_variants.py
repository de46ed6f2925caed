"""A task scored under every prompt its paper ran (TAPE, Appendix C: Winograd's four distinct
templates, Ethics' one to three per concept), with the mean and spread over prompts, as the paper
averages them. Independent of the run pipeline: a language-model solver, a task and its examples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rueval.scoring import Scores, score_task
from rueval.solvers.base import Setting
from rueval.solvers.lm import LMSolver
from rueval.tasks import Example, Task
from rueval.tasks.prompts import prompt_variants


@dataclass(frozen=True)
class VariantScores:
    """A task's scores under each of its prompts, the default first (tasks.prompts.prompt_variants)."""

    task: str
    variants: tuple[Scores, ...]

    @property
    def mean(self) -> float:
        """The task score's mean over prompts."""
        return float(np.mean([scores.score for scores in self.variants]))

    @property
    def std(self) -> float:
        """The task score's standard deviation over prompts (population, as over few-shot episodes)."""
        return float(np.std([scores.score for scores in self.variants]))

    def metric_means(self) -> dict[str, float]:
        names = self.variants[0].metrics
        return {name: float(np.mean([scores.metrics[name] for scores in self.variants])) for name in names}


def score_prompt_variants(
    solver: LMSolver,
    task: Task,
    train: Sequence[Example],
    examples: Sequence[Example],
    setting: Setting | None = None,
) -> VariantScores:
    """Score ``examples`` under every prompt of the task in one engine call (requests the prompts
    share are computed once), each with the setting's demonstrations from ``train`` (zero-shot when
    none is given)."""
    setting = setting or Setting()
    plans = [solver.plan(task, train, examples, setting, prompt) for prompt in prompt_variants(task)]
    requests = [request for plan in plans for request in plan.requests]
    results = dict(zip(requests, solver.engine.compute(requests, f"{solver.name} on {task.name}: every prompt")))
    return VariantScores(task.name, tuple(score_task(task, examples, solver.answer(plan, results)) for plan in plans))
