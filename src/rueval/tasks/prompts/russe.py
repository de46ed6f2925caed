"""RUSSE: is the word used in the same sense in both sentences? (Our prompt.)"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = (
    "Предложение 1: {sentence1} Предложение 2: {sentence2} "
    'Вопрос: в обоих предложениях слово "{word}" употреблено в одном и том же значении? Ответ:'
)
OPTIONS = {YES: True, NO: False}

PROMPT = ChoicePrompt(TEMPLATE, OPTIONS)
