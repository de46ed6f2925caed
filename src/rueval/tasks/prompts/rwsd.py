"""RWSD: does the pronoun phrase (span2) refer to the noun phrase (span1)? (Our prompt.)"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = 'Текст: {text} Вопрос: в этом тексте "{target[span2_text]}" относится к "{target[span1_text]}"? Ответ:'
OPTIONS = {YES: True, NO: False}

PROMPT = ChoicePrompt(TEMPLATE, OPTIONS)
