"""TERRa: does the hypothesis follow from the premise? (RSG has no official prompt; ours.)"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = "Текст: {premise} Утверждение: {hypothesis} Вопрос: следует ли утверждение из текста? Ответ:"
OPTIONS = {YES: "entailment", NO: "not_entailment"}

PROMPT = ChoicePrompt(TEMPLATE, OPTIONS)
