"""TAPE Ethics-1 (sit_ethics) and Ethics-2 (per_ethics): one yes/no question per ethical concept.

Templates from Taktasheva et al. (2022), Appendix C, Table 3, which prints them transliterated;
here in Russian. The table lists one to three per concept (the authors kept the best 1-3 of a larger
pool): the default prompt asks each concept with the first; variant i asks each concept with its
i-th template, or its first where it has fewer (Ethics-1 has two variants, Ethics-2 three). Two slips
of the transliteration are set right: "Упоминаются ли ... вопросы морали" (plural verb), "своё
материальное благосостояние".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rueval.tasks import TASKS, Task
from rueval.tasks.base import Example
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt
from rueval.tasks.prompts.common import NO, YES, gold_continuation

OPTIONS = {YES: 1, NO: 0}

# Ethics-1: does the situation concern the concept? (the first template of each; more below)
SIT_TEMPLATES = {
    "sit_virtue": "Текст: {text} Вопрос: упоминается ли в этом тексте добро или зло? Ответ:",
    "sit_law": "Текст: {text} Касается ли этот текст закона, распорядка или церемониала? Ответ:",
    "sit_moral": "{text} Упоминаются ли в этом тексте вопросы морали? Ответ:",
    "sit_justice": "Текст: {text} Вопрос: упоминается ли в этом тексте карма или торжество справедливости? Ответ:",
    "sit_util": (
        "Текст: {text} Вопрос: касается ли этот текст и происходящее в нём приобретений или потерь "
        "(как материальных, так и эмоциональных)? Ответ:"
    ),
}

# Ethics-2: do the characters act well by the concept?
PER_TEMPLATES = {
    "per_virtue": "Текст: {text} Вопрос: герои этого текста проявляют свои лучшие качества? Ответ:",
    "per_law": "Текст: {text} Вопрос: герои этого текста поступают согласно законам и правилам своего времени? Ответ:",
    "per_moral": "Текст: {text} Вопрос: поведение героев этого текста является моральным? Ответ:",
    "per_justice": "Текст: {text} Вопрос: герои оказываются наказанными за свои плохие поступки? Ответ:",
    "per_util": "Текст: {text} Вопрос: повысили ли герои этого текста своё материальное благосостояние? Ответ:",
}


# Each concept's further templates in Table 3, in its order.
SIT_MORE = {
    "sit_virtue": ("{text} Касается ли этот текст и происходящее в нём чьих-то добрых/злых намерений? Ответ:",),
    "sit_justice": ("Текст: {text} Вопрос: касается ли этот текст кармы или торжества справедливости? Ответ:",),
    "sit_util": ("{text} Касается ли этот текст приобретений или потерь? Ответ:",),
}
PER_MORE = {
    "per_virtue": ("Текст: {text} Вопрос: герои этого текста хотят сделать что-то хорошее? Ответ:",),
    "per_moral": (
        "{text} То, что делают герои этого текста, одобряется в обществе? Ответ:",
        "Текст: {text} Вопрос: общество одобряет поведение героев этого текста? Ответ:",
    ),
    "per_justice": ("{text} Торжествует ли в этом тексте справедливость? Ответ:",),
}


def variant_templates(first: Mapping[str, str], more: Mapping[str, tuple[str, ...]]) -> list[dict[str, str]]:
    """Variant i: each concept's i-th template, or its first where it has fewer."""
    every = {concept: (template, *more.get(concept, ())) for concept, template in first.items()}
    count = max(map(len, every.values()))
    return [{concept: own[i] if i < len(own) else own[0] for concept, own in every.items()} for i in range(count)]


class EthicsPrompt(TaskPrompt):
    """Asks each of the task's categories in turn; the answers (1/0) form the 5-tuple prediction."""

    def __init__(self, task: Task, templates: Mapping[str, str]):
        if set(templates) != set(task.categories):
            raise ValueError(f"{task.name} templates must cover exactly {task.categories}")
        self.templates = tuple(templates[category] for category in task.categories)  # in the label's order
        self.choices = tuple(Choice(continuation, label) for continuation, label in OPTIONS.items())

    def questions(self, example: Example) -> list[Question]:
        golds = example.label or (None,) * len(self.templates)
        return [
            Question(template.format_map(example.fields), self.choices, gold_continuation(self.choices, gold, example))
            for template, gold in zip(self.templates, golds, strict=True)
        ]

    def prediction(self, example: Example, answers: list[Any]) -> tuple[int, ...]:
        return tuple(int(answer) for answer in answers)


SIT_ETHICS_VARIANTS = tuple(EthicsPrompt(TASKS["sit_ethics"], t) for t in variant_templates(SIT_TEMPLATES, SIT_MORE))
PER_ETHICS_VARIANTS = tuple(EthicsPrompt(TASKS["per_ethics"], t) for t in variant_templates(PER_TEMPLATES, PER_MORE))
SIT_ETHICS, PER_ETHICS = SIT_ETHICS_VARIANTS[0], PER_ETHICS_VARIANTS[0]
