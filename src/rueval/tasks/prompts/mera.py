"""MERA's prompts, for examples read from MERA's task files: each record's own instruction filled with its
inputs, then the answer as MERA's lm-eval tasks score it (ai-forever/MERA, lm-evaluation-harness/lm_eval/
tasks/rsg.py and tape.py): RCB " 1"/" 2"/" 3", PARus " 1"/" 2", RWSD " Да"/" Нет" after "\\nОтвет:";
ruWorldTree and ruOpenBookQA " A".." D" after the instruction (which ends in "Ответ:"); MultiQ and
CheGeKa generated after it. Examples from other data keep the task's own prompt.
"""

from __future__ import annotations

from typing import Any

from rueval.errors import RuevalError
from rueval.tasks.base import LETTERS, Example
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt
from rueval.tasks.prompts.common import gold_continuation

ANSWER_CUE = "\nОтвет:"  # MERA's RSG tasks append it to the instruction
# task -> (continuation, label) per option, with the task's own labels; absent: the answer is generated
OPTIONS: dict[str, tuple[tuple[str, Any], ...]] = {
    "rcb": ((" 1", "entailment"), (" 2", "contradiction"), (" 3", "neutral")),
    "parus": ((" 1", 0), (" 2", 1)),
    "rwsd": ((" Да", True), (" Нет", False)),
    "ru_worldtree": tuple((f" {letter}", letter) for letter in LETTERS),
    "ru_openbook": tuple((f" {letter}", letter) for letter in LETTERS),
}
CUED = ("rcb", "parus", "rwsd")


class MeraInstructionPrompt(TaskPrompt):
    """The task's prompt, except for examples that carry MERA's instruction (field "mera")."""

    def __init__(self, task: str, own: TaskPrompt):
        self.task, self.own = task, own
        self.max_new_tokens, self.stop = own.max_new_tokens, own.stop

    def questions(self, example: Example) -> list[Question]:
        mera = example.fields.get("mera")
        if not mera:
            return self.own.questions(example)
        context = _instruction(example, mera) + (ANSWER_CUE if self.task in CUED else "")
        if self.task not in OPTIONS:
            target = None if example.label is None else " " + example.label[0]
            return [Question(context, (), target)]
        choices = tuple(Choice(continuation, label) for continuation, label in OPTIONS[self.task])
        return [Question(context, choices, gold_continuation(choices, example.label, example))]

    def prediction(self, example: Example, answers: list[Any]) -> Any:
        return self.own.prediction(example, answers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.own, name)  # the task's own prompt's settings (templates, options)


def _instruction(example: Example, mera: dict[str, Any]) -> str:
    instruction, inputs = mera.get("instruction"), mera.get("inputs")
    if not isinstance(instruction, str) or not isinstance(inputs, dict):
        raise RuevalError(f"example {example.key}: MERA's record needs an instruction text and an inputs object")
    try:
        return instruction.format(**inputs).strip()
    except KeyError as e:
        raise RuevalError(
            f"example {example.key}: the MERA instruction names {{{e.args[0]}}}, not in its inputs"
        ) from None
    except (IndexError, ValueError) as e:
        raise RuevalError(f"example {example.key}: the MERA instruction is not a template ({e})") from None
