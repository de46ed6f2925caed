"""TAPE MultiQ: the answer is generated from the main text (Appendix C, Table 2; budget: Section 5.2)."""

from __future__ import annotations

from rueval.tasks.prompts.common import GenerativePrompt

TEMPLATE = "Текст: {main_text} Вопрос: {question} Ответ:"
MAX_NEW_TOKENS = (400, 800)  # zero-shot, few-shot

PROMPT = GenerativePrompt(TEMPLATE, MAX_NEW_TOKENS)
PROMPT.stop = ()  # TAPE generates up to the token budget, with no stop sequence
