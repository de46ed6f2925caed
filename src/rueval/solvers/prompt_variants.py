"""A task scored under every prompt its paper ran (TAPE, Appendix C: Winograd's four distinct
templates, Ethics' one to three per concept), with the mean and spread over prompts, as the paper
averages them, outside a run: a language-model solver, a task and its examples. A run does the
same with ``--prompts all`` (rueval.run), its requests pooled with every other task's.
"""

from __future__ import annotations

from collections.abc import Sequence

from rueval.results import PromptResult, PromptScores
from rueval.scoring.task_scores import score_task
from rueval.solvers.base import Setting
from rueval.solvers.lm import LMSolver
from rueval.tasks import Example, Task
from rueval.tasks.prompts import prompt_variants


def score_prompt_variants(
    solver: LMSolver,
    task: Task,
    train: Sequence[Example],
    examples: Sequence[Example],
    setting: Setting | None = None,
) -> PromptScores:
    """Score ``examples`` under every prompt of the task in one engine call (requests the prompts
    share are computed once), each with the setting's demonstrations from ``train`` (zero-shot when
    none is given)."""
    setting = setting or Setting()
    plans = [solver.plan(task, train, examples, setting, prompt) for prompt in prompt_variants(task)]
    requests = [request for plan in plans for request in plan.requests]
    results = dict(zip(requests, solver.engine.compute(requests, f"{solver.name} on {task.name}: every prompt")))
    scores = [score_task(task, examples, solver.answer(plan, results)) for plan in plans]
    return PromptScores(tuple(PromptResult(one.score, one.metrics) for one in scores))
