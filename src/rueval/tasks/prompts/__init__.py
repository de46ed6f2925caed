"""The prompt registry: how each task is put to a language model.

A task names its prompt (``Task.prompt``): a TaskPrompt in a module, by default
``rueval.tasks.prompts.<task>:PROMPT``. Examples read from MERA's
files are asked as MERA asks them (rueval.tasks.prompts.mera).

Where the task's paper ran several prompts (TAPE's Appendix C: Winograd, Ethics), the module also
declares them, the default first, as ``<NAME>_VARIANTS`` beside ``<NAME>``: ``prompt_variants``.
A run asks with the default prompt, or with ``--prompts all`` with every one: ``asked_prompts``.
"""

from __future__ import annotations

from importlib import import_module

from rueval.core.errors import RuevalError
from rueval.data.mera_generative_tasks import GENERATIVE
from rueval.data.mera_tasks import MERA
from rueval.tasks import PerTask, Task, get_task
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Choice, Question, TaskPrompt
from rueval.tasks.prompts.mera import MeraInstructionPrompt


def _own_prompt(task: Task) -> TaskPrompt:
    module, _, attribute = task.prompt.partition(":")
    try:
        prompt: TaskPrompt = getattr(import_module(module), attribute)  # a module's prompt object, named by the task
        return prompt
    except (ImportError, AttributeError) as e:
        raise RuevalError(f"{task.name}: its prompt {task.prompt!r} cannot be loaded ({e})") from None


def _with_mera(task: Task, own: TaskPrompt) -> TaskPrompt:
    """A task shared with MERA asks MERA's examples as MERA does; MERA's own tasks' prompts are MERA's."""
    return MeraInstructionPrompt(MERA[task.name], own) if task.name in MERA and task.name not in GENERATIVE else own


def _prompt(task: Task) -> TaskPrompt:
    return _with_mera(task, _own_prompt(task))


def _variants(task: Task) -> tuple[TaskPrompt, ...]:
    default = PROMPTS[task.name]
    module, _, attribute = task.prompt.partition(":")
    declared = getattr(import_module(module), f"{attribute}_VARIANTS", ())
    return (default, *(_with_mera(task, variant) for variant in declared[1:])) if declared else (default,)


PROMPT_CHOICES = ("default", "all")  # --prompts: the task's default prompt, or every prompt its paper ran


PROMPTS: PerTask[TaskPrompt] = PerTask(_prompt)
VARIANTS: PerTask[tuple[TaskPrompt, ...]] = PerTask(_variants)


def get_prompt(task: Task | str) -> TaskPrompt:
    """The prompt of a task, given as a Task or by any of its names or aliases."""
    return PROMPTS[task.name if isinstance(task, Task) else get_task(task).name]


def prompt_variants(task: Task | str) -> tuple[TaskPrompt, ...]:
    """Every prompt the task's paper ran, the default (get_prompt) first; the default alone where
    the paper ran one."""
    return VARIANTS[task.name if isinstance(task, Task) else get_task(task).name]


def asked_prompts(task: Task, choice: str) -> tuple[TaskPrompt, ...]:
    """The prompts a run asks ``task`` with under ``--prompts choice`` (PROMPT_CHOICES), the default first."""
    return prompt_variants(task) if choice == "all" else (get_prompt(task),)


__all__ = [
    "DEMO_SEPARATOR",
    "PROMPTS",
    "PROMPT_CHOICES",
    "VARIANTS",
    "Choice",
    "Question",
    "TaskPrompt",
    "asked_prompts",
    "get_prompt",
    "prompt_variants",
]
