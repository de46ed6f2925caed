"""MERA's prompts, for examples read from MERA's task files: each record's own instruction filled with its
inputs, then the answer as MERA's lm-eval tasks score it (ai-forever/MERA, lm-evaluation-harness/lm_eval/
tasks/rsg.py and tape.py): RCB " 1"/" 2"/" 3", PARus " 1"/" 2", RWSD " Да"/" Нет" after "\\nОтвет:";
ruWorldTree and ruOpenBookQA " A".." D" after the instruction (which ends in "Ответ:"); MultiQ and
CheGeKa generated after it (each task's answers and cue are declared in ``rueval.data.mera.MERA``).
Examples from other data keep the task's own prompt.
"""

from __future__ import annotations

from typing import Any

from rueval.data.mera import MeraTask
from rueval.errors import RuevalError
from rueval.tasks.base import Example
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt
from rueval.tasks.prompts.common import gold_continuation

ANSWER_CUE = "\nОтвет:"  # MERA's RSG tasks append it to the instruction


class MeraInstructionPrompt(TaskPrompt):
    """The task's prompt, except for examples that carry MERA's instruction (field "mera")."""

    def __init__(self, mera: MeraTask, own: TaskPrompt):
        self.mera, self.own = mera, own
        self.answers = tuple(Choice(f" {text}", label) for text, label in mera.answers.items())
        self.max_new_tokens, self.stop = own.max_new_tokens, own.stop

    def questions(self, example: Example) -> list[Question]:
        mera = example.fields.get("mera")
        if not mera:
            return self.own.questions(example)
        context = _instruction(example, mera) + (ANSWER_CUE if self.mera.cued else "")
        if not self.answers:
            target = None if example.label is None else " " + example.label[0]
            return [Question(context, (), target)]
        return [Question(context, self.answers, gold_continuation(self.answers, example.label, example))]

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
