"""RuOpenBookQA and RuWorldTree: the question stem continued by each answer option.

Taktasheva et al. (2022), Appendix C, Table 2: "{QUESTION} {CANDIDATE ANSWER}", one candidate per
inline option, as many as the item has (A-D in most, A-E in some RuWorldTree items).
"""

from __future__ import annotations

from rueval.tasks import split_options
from rueval.tasks.base import Example
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt
from rueval.tasks.prompts.common import gold_continuation

OPTION = " {option}"  # appended to the stem


class ScienceQAPrompt(TaskPrompt):
    def __init__(self, task: str):
        self.task = task

    def questions(self, example: Example) -> list[Question]:
        stem, options = split_options(example.fields["question"], where=f"{self.task} example {example.key}: question")
        choices = tuple(Choice(OPTION.format(option=text), letter) for letter, text in options.items())
        return [Question(stem, choices, gold_continuation(choices, example.label, example))]


RU_OPENBOOK = ScienceQAPrompt("ru_openbook")
RU_WORLDTREE = ScienceQAPrompt("ru_worldtree")
