"""MuSeRC: each answer option is its own yes/no question (is this answer right?). (Our prompt.)"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = "Текст: {passage} Вопрос: {question} Вариант ответа: {answer} Верен ли этот вариант ответа? Ответ:"
OPTIONS = {YES: 1, NO: 0}

PROMPT = ChoicePrompt(TEMPLATE, OPTIONS)
