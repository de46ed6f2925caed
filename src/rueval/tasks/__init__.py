"""The task registry: every RSG and TAPE task, found by name, alias or benchmark."""

from __future__ import annotations

from rueval.errors import RuevalError
from rueval.tasks.base import Example, Record, Task, split_options
from rueval.tasks.rsg import RSG_TASKS
from rueval.tasks.tape import TAPE_TASKS

TASKS: dict[str, Task] = {task.name: task for task in (*RSG_TASKS, *TAPE_TASKS)}
_BY_NAME = {name: task for task in TASKS.values() for name in task.names}
BENCHMARKS = {"rsg": RSG_TASKS, "tape": TAPE_TASKS, "all": tuple(TASKS.values())}


def get_task(name: str) -> Task:
    try:
        return _BY_NAME[name.strip().lower()]
    except KeyError:
        raise RuevalError(f"unknown task '{name}'; expected one of: {', '.join(TASKS)} (or rsg, tape, all)") from None


def resolve_tasks(spec: str) -> list[Task]:
    """'rcb,parus' -> those tasks; 'rsg', 'tape', 'all' -> a benchmark's tasks. Order kept, no repeats."""
    tasks: list[Task] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        for task in BENCHMARKS.get(part.lower()) or (get_task(part),):
            if task not in tasks:
                tasks.append(task)
    if not tasks:
        raise RuevalError("no task given: name tasks with -t, e.g. -t rcb,parus or -t rsg")
    return tasks


__all__ = ["BENCHMARKS", "TASKS", "Example", "Record", "Task", "get_task", "resolve_tasks", "split_options"]
