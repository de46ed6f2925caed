"""Building blocks the task prompts share: a question answered by one of fixed options, and a
question whose answer is generated. Templates are ``str.format`` strings over the example's
fields (nested fields as ``{target[span1_text]}``); the data is never parsed as a template."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rueval.core.errors import RuevalError
from rueval.tasks.base import Example
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt

# The yes/no answers of every binary prompt, as in TAPE's Winograd and Ethics prompts (Appendix C).
YES = " Да"
NO = " Нет"

Fields = Callable[[Example], Mapping[str, Any]]


def record_fields(example: Example) -> Mapping[str, Any]:
    return example.fields


def gold_continuation(choices: Sequence[Choice], gold: Any, example: Example) -> str | None:
    """The continuation of the choice standing for the gold label; None when there is no label."""
    if gold is None:
        return None
    for choice in choices:
        if choice.label == gold:
            return choice.continuation
    raise RuevalError(f"example {example.key}: gold label {gold!r} is none of the prompt's options")


class ChoicePrompt(TaskPrompt):
    """One question per example: a filled template, answered by one of fixed continuations.

    ``options`` maps each continuation to the label it stands for, e.g. {" Да": True, " Нет": False};
    ``fields`` gives the template's fields when they are not the record's own.
    """

    def __init__(self, template: str, options: Mapping[str, Any], fields: Fields = record_fields):
        self.template = template
        self.choices = tuple(Choice(continuation, label) for continuation, label in options.items())
        self.fields = fields

    def questions(self, example: Example) -> list[Question]:
        context = self.template.format_map(self.fields(example))
        return [Question(context, self.choices, gold_continuation(self.choices, example.label, example))]


class GenerativePrompt(TaskPrompt):
    """One question per example whose answer the model generates (span tasks with free answers)."""

    def __init__(self, template: str, max_new_tokens: tuple[int, int], fields: Fields = record_fields):
        self.template = template
        self.max_new_tokens = max_new_tokens
        self.fields = fields

    def questions(self, example: Example) -> list[Question]:
        context = self.template.format_map(self.fields(example))
        target = None if example.label is None else " " + example.label[0]
        return [Question(context, target=target)]

    def prediction(self, example: Example, answers: list[Any]) -> str:
        return str(answers[0]).strip()
