"""The task registry: every task rueval knows, found by name, alias or benchmark.

rueval's own tasks are declared in the modules named by ``DECLARATIONS``: a ``BENCHMARK``
(rueval.tasks.benchmark) each, or ``TASKS`` of benchmarks declared elsewhere. Tasks of one's own come
from ``register``, benchmarks from ``declare``; lm-evaluation-harness task files are lm-eval's own
tasks, run through lm-eval's task code (rueval.tasks.lm_eval_tasks), not registered here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib import import_module
from typing import TypeVar

from rueval.core.errors import RuevalError
from rueval.tasks.base import Example, Record, Task
from rueval.tasks.benchmark import Benchmark, Total
from rueval.tasks.inline_options import split_options
from rueval.tasks.mera import BENCHMARK as MERA
from rueval.tasks.rsg import BENCHMARK as RSG
from rueval.tasks.tape import BENCHMARK as TAPE

# The modules of rueval.tasks that declare rueval's own tasks, in the order the tasks are listed.
DECLARATIONS = ("rsg", "tape", "mera")
EVERY_TASK = "all"  # -t all: every task known but MERA's own (their data is MERA's files alone: -t mera)

TASKS: dict[str, Task] = {}
# name -> benchmark: the declared ones, and a plain one for each other name a task gives (a YAML tag)
BENCHMARKS: dict[str, Benchmark] = {}


def register(*tasks: Task) -> None:
    """Make tasks known to every command by name and alias. A name another task answers to is an error."""
    for task in tasks:
        for other in TASKS.values():
            clash = set(other.names) & set(task.names)
            if clash:
                raise RuevalError(f"{task.name}: task name '{clash.pop()}' is taken (by {other.name})")
        TASKS[task.name] = task
        BENCHMARKS.setdefault(task.benchmark, Benchmark(task.benchmark))


def declare(benchmark: Benchmark) -> None:
    """Make a benchmark known with its tasks (those of another benchmark it shares are not registered again)."""
    if benchmark.name == EVERY_TASK or any(benchmark.name in task.names for task in TASKS.values()):
        raise RuevalError(f"benchmark name '{benchmark.name}' is taken by a task, or means every task")
    BENCHMARKS[benchmark.name] = benchmark
    register(*(task for task in benchmark.tasks if TASKS.get(task.name) is not task))


def tasks_of(benchmark: Benchmark) -> tuple[Task, ...]:
    """Every task of a benchmark: its declared tasks, then those declared into it (``benchmark=`` its name)."""
    own = (task.name for task in benchmark.tasks)
    joined = (name for name, task in TASKS.items() if task.benchmark == benchmark.name)
    return tuple(TASKS[name] for name in dict.fromkeys([*own, *joined]) if name in TASKS)


def get_task(name: str) -> Task:
    wanted = name.strip().lower()
    for task in TASKS.values():
        if wanted in task.names:
            return task
    groups = ", ".join([*BENCHMARKS, EVERY_TASK])
    raise RuevalError(f"unknown task '{name}'; expected one of: {', '.join(TASKS)} (or {groups})")


def is_known(name: str) -> bool:
    """Whether -t NAME names rueval's tasks: a task (by any of its names), a benchmark, or all."""
    wanted = name.strip().lower()
    return wanted == EVERY_TASK or wanted in BENCHMARKS or any(wanted in task.names for task in TASKS.values())


def resolve_tasks(spec: str) -> list[Task]:
    """'rcb,parus' -> those tasks; a benchmark's name -> its tasks; 'all' -> every task (MERA's own aside). Order
    kept, no repeats."""
    tasks: list[Task] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        wanted = part.lower()
        benchmark = BENCHMARKS.get(wanted)
        every = tuple(task for task in TASKS.values() if task.benchmark != MERA.name)
        members = every if wanted == EVERY_TASK else tasks_of(benchmark) if benchmark else ()
        for task in members or (get_task(part),):
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
    _declared = import_module(f"{__name__}.{_module}")
    if hasattr(_declared, "BENCHMARK"):
        declare(_declared.BENCHMARK)
    else:
        register(*_declared.TASKS)


__all__ = [
    "BENCHMARKS",
    "DECLARATIONS",
    "EVERY_TASK",
    "MERA",
    "RSG",
    "TAPE",
    "TASKS",
    "Benchmark",
    "Example",
    "PerTask",
    "Record",
    "Task",
    "Total",
    "declare",
    "get_task",
    "is_known",
    "register",
    "resolve_tasks",
    "split_options",
    "tasks_of",
]
