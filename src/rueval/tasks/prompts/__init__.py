"""The prompt registry: how each task is put to a language model.

A task names its prompt (``Task.prompt``): a TaskPrompt in a module, by default
``rueval.tasks.prompts.<task>:PROMPT``, or a Template (a YAML task's). Examples read from MERA's
task files are asked with MERA's own instructions.
"""

from __future__ import annotations

from importlib import import_module

from rueval.data.mera import MERA
from rueval.errors import RuevalError
from rueval.tasks import PerTask, Task, Template, get_task
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Choice, Question, TaskPrompt
from rueval.tasks.prompts.mera import MeraInstructionPrompt
from rueval.tasks.prompts.template import TemplatePrompt


def _own_prompt(task: Task) -> TaskPrompt:
    if isinstance(task.prompt, Template):
        return TemplatePrompt(task.shape, task.prompt)
    module, _, attribute = task.prompt.partition(":")
    try:
        return getattr(import_module(module), attribute)
    except (ImportError, AttributeError) as e:
        raise RuevalError(f"{task.name}: its prompt {task.prompt!r} cannot be loaded ({e})") from None


def _prompt(task: Task) -> TaskPrompt:
    own = _own_prompt(task)
    return MeraInstructionPrompt(MERA[task.name], own) if task.name in MERA else own


PROMPTS: PerTask[TaskPrompt] = PerTask(_prompt)


def get_prompt(task: Task | str) -> TaskPrompt:
    """The prompt of a task, given as a Task or by any of its names or aliases."""
    return PROMPTS[task.name if isinstance(task, Task) else get_task(task).name]


__all__ = ["DEMO_SEPARATOR", "PROMPTS", "Choice", "Question", "TaskPrompt", "get_prompt"]
