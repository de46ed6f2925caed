"""DaNetQA: a yes/no question about a passage. (Our prompt.)"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = "Текст: {passage} Вопрос: {question} Ответ:"
OPTIONS = {YES: True, NO: False}

PROMPT = ChoicePrompt(TEMPLATE, OPTIONS)
