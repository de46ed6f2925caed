"""The task registry: every task rueval knows, found by name, alias or benchmark.

rueval's own tasks are declared in the modules named by ``DECLARATIONS`` (a ``TASKS`` tuple each);
tasks of one's own come from YAML files (``rueval.tasks.include``) or from ``register``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib import import_module
from typing import TypeVar

from rueval.core.errors import RuevalError
from rueval.tasks.base import Example, Record, Task, Template
from rueval.tasks.inline_options import split_options

# The modules of rueval.tasks that declare rueval's own tasks, in the order the tasks are listed.
DECLARATIONS = ("rsg", "tape")

TASKS: dict[str, Task] = {}
BENCHMARKS: dict[str, tuple[Task, ...]] = {}  # benchmark -> its tasks; "all" -> every task


def register(*tasks: Task) -> None:
    """Make tasks known to every command by name and alias. A name another task answers to is an
    error, unless that task came from the same file (a YAML file read again replaces its tasks)."""
    for task in tasks:
        for other in TASKS.values():
            clash = set(other.names) & set(task.names)
            if clash and not (task.source and other.source == task.source and other.name == task.name):
                where = other.source or "rueval's own tasks"
                raise RuevalError(f"{task.source or task.name}: task name '{clash.pop()}' is taken (by {where})")
        TASKS[task.name] = task
    grouped: dict[str, list[Task]] = {}
    for task in TASKS.values():
        grouped.setdefault(task.benchmark, []).append(task)
    BENCHMARKS.clear()
    BENCHMARKS.update({name: tuple(members) for name, members in grouped.items()})
    BENCHMARKS["all"] = tuple(TASKS.values())


def get_task(name: str) -> Task:
    wanted = name.strip().lower()
    for task in TASKS.values():
        if wanted in task.names:
            return task
    raise RuevalError(f"unknown task '{name}'; expected one of: {', '.join(TASKS)} (or {', '.join(BENCHMARKS)})")


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


Value = TypeVar("Value")


class PerTask(Mapping[str, Value]):
    """What follows from each registered task (its prompt, its perturbable fields), by task name:
    derived on first use and kept while the task stays registered."""

    def __init__(self, derive: Callable[[Task], Value]):
        self._derive = derive
        self._kept: dict[str, tuple[Task, Value]] = {}

    def __getitem__(self, name: str) -> Value:
        task = TASKS[name]
        kept = self._kept.get(name)
        if kept is None or kept[0] is not task:
            kept = self._kept[name] = (task, self._derive(task))
        return kept[1]

    def __iter__(self) -> Iterator[str]:
        return iter(TASKS)

    def __len__(self) -> int:
        return len(TASKS)


for _module in DECLARATIONS:
    register(*import_module(f"{__name__}.{_module}").TASKS)


__all__ = [
    "BENCHMARKS",
    "DECLARATIONS",
    "TASKS",
    "Example",
    "PerTask",
    "Record",
    "Task",
    "Template",
    "get_task",
    "register",
    "resolve_tasks",
    "split_options",
]
