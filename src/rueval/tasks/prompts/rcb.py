"""RCB: three-way entailment; "неизвестно" stands for the neutral class. (Our prompt.)"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = (
    "Текст: {premise} Утверждение: {hypothesis} "
    "Вопрос: верно ли утверждение, судя по тексту: да, нет или неизвестно? Ответ:"
)
OPTIONS = {YES: "entailment", NO: "contradiction", " Неизвестно": "neutral"}

PROMPT = ChoicePrompt(TEMPLATE, OPTIONS)
