"""ruTiE's dialogues, asked as MERA's harness asks them: a dialogue's questions in order, each with the
questions before it and the model's own answers to them (MERA-Evaluation/MERA, commit 9cf05b2:
benchmark_tasks/custom_context_formers.py puts the earlier questions in the instruction's "{context}",
rutie/utils.py fills in the model's answers as they come, the option it scored highest).

The questions are asked in rounds: round r asks the r-th question of every dialogue, each example
carrying its dialogue so far (``DIALOGUE``) for its prompt (rueval.tasks.prompts.mera), so a round's
requests are pooled, deduplicated and cached as any task's are."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rueval.data.mera_choice_tasks import DIALOGUE
from rueval.data.mera_tasks import MERA
from rueval.models.base import Request
from rueval.solvers import Setting
from rueval.solvers.base import PooledSolver, TaskAnswers
from rueval.tasks import Example, Task

TURN = ("question", "choice1", "choice2")  # a question's inputs, as a turn of the dialogue shows them


def is_dialogue(task: Task) -> bool:
    return task.name in MERA and MERA[task.name].dialog


def rounds(examples: Sequence[Example]) -> list[list[int]]:
    """The examples' positions by round: round r holds the r-th question of each dialogue (by
    question_id), dialogues in order of their first appearance."""
    dialogues: dict[Any, list[int]] = defaultdict(list)
    for i, example in enumerate(examples):
        dialogues[example.fields["dialog_id"]].append(i)
    ordered = [sorted(positions, key=lambda i: examples[i].fields["question_id"]) for positions in dialogues.values()]
    return [[d[r] for d in ordered if r < len(d)] for r in range(max(map(len, ordered), default=0))]


def answer_dialogues(
    solver: PooledSolver[Any],
    task: Task,
    train: Sequence[Example],
    examples: Sequence[Example],
    settings: Sequence[Setting],
) -> tuple[TaskAnswers, set[Request]]:
    """The dialogues' answers in each setting, round by round; and the requests the model computed."""
    every = [_answered(solver, task, train, examples, setting) for setting in settings]
    unmatched = [answers.unmatched for answers, _ in every if answers.unmatched is not None]
    merged = TaskAnswers(
        {s: p for answers, _ in every for s, p in answers.by_setting.items()},
        {s: p for answers, _ in every for s, p in answers.normalized.items()},
        every[0][0].protocol if every else "",
        sum(unmatched) if unmatched else None,
        {s: e for answers, _ in every for s, e in answers.exchanges.items()},
    )
    return merged, {request for _, computed in every for request in computed}


def _answered(
    solver: PooledSolver[Any], task: Task, train: Sequence[Example], examples: Sequence[Example], setting: Setting
) -> tuple[TaskAnswers, set[Request]]:
    """The dialogues' answers in one setting."""
    answer_text = {label: text for text, label in MERA[task.name].answers.items()}
    n = len(examples)
    predictions: list[Any] = [None] * n
    normalized: list[Any] = [None] * n
    exchanges: list[Any] = [None] * n
    earlier: dict[Any, list[dict[str, Any]]] = defaultdict(list)  # dialogue -> its turns so far
    computed: set[Request] = set()
    protocol, unmatched = "", None
    for positions in rounds(examples):
        asked = [_with_dialogue(examples[i], earlier[examples[i].fields["dialog_id"]]) for i in positions]
        plan = solver.plan_task(task, train, asked, [setting])
        results: dict[Request, Any] = {}
        for done, newly in solver.engine.stream(plan.requests, f"{solver.name} on {task.name}"):
            results, computed = done, computed | newly
        answers = solver.answer_task(plan, results)
        protocol = answers.protocol
        if answers.unmatched is not None:
            unmatched = (unmatched or 0) + answers.unmatched
        for j, i in enumerate(positions):
            predictions[i], exchanges[i] = answers.by_setting[setting][j], answers.exchanges[setting][j]
            if setting in answers.normalized:
                normalized[i] = answers.normalized[setting][j]
            turn = {name: examples[i].fields[name] for name in TURN}
            earlier[examples[i].fields["dialog_id"]].append({**turn, "answer": answer_text[predictions[i]]})
    scored_so = {setting: normalized} if None not in normalized else {}  # options by per-byte log-likelihood
    return TaskAnswers({setting: predictions}, scored_so, protocol, unmatched, {setting: exchanges}), computed


def _with_dialogue(example: Example, turns: list[dict[str, Any]]) -> Example:
    return replace(example, fields={**example.fields, DIALOGUE: list(turns)})
