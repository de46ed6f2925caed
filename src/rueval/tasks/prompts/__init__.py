"""The prompt registry: how each of the 16 tasks is put to a language model."""

from __future__ import annotations

from rueval.data.mera import MERA_TASKS
from rueval.tasks import Task, get_task
from rueval.tasks.prompts import (
    chegeka,
    danetqa,
    ethics,
    lidirus,
    multiq,
    muserc,
    parus,
    rcb,
    rucos,
    russe,
    rwsd,
    science_qa,
    terra,
    winograd,
)
from rueval.tasks.prompts.base import DEMO_SEPARATOR, Choice, Question, TaskPrompt
from rueval.tasks.prompts.mera import MeraInstructionPrompt

PROMPTS: dict[str, TaskPrompt] = {
    "lidirus": lidirus.PROMPT,
    "rcb": rcb.PROMPT,
    "parus": parus.PROMPT,
    "muserc": muserc.PROMPT,
    "terra": terra.PROMPT,
    "russe": russe.PROMPT,
    "rwsd": rwsd.PROMPT,
    "danetqa": danetqa.PROMPT,
    "rucos": rucos.PROMPT,
    "winograd": winograd.PROMPT,
    "ru_openbook": science_qa.RU_OPENBOOK,
    "ru_worldtree": science_qa.RU_WORLDTREE,
    "multiq": multiq.PROMPT,
    "chegeka": chegeka.PROMPT,
    "sit_ethics": ethics.SIT_ETHICS,
    "per_ethics": ethics.PER_ETHICS,
}


# Examples read from MERA's task files are asked with MERA's own instructions.
for _name in MERA_TASKS:
    PROMPTS[_name] = MeraInstructionPrompt(_name, PROMPTS[_name])


def get_prompt(task: Task | str) -> TaskPrompt:
    """The prompt of a task, given as a Task or by any of its names or aliases."""
    name = task.name if isinstance(task, Task) else get_task(task).name
    return PROMPTS[name]


__all__ = ["DEMO_SEPARATOR", "PROMPTS", "Choice", "Question", "TaskPrompt", "get_prompt"]
