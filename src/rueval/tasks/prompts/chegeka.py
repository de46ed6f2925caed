"""TAPE CheGeKa: a trivia answer is generated (Appendix C, Table 2; budget: Section 5.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rueval.tasks.base import Example
from rueval.tasks.prompts.common import GenerativePrompt

TEMPLATE = "ЧГК. Тема: {topic} Вопрос: {question} Ответ:"
MAX_NEW_TOKENS = (100, 200)  # zero-shot, few-shot


def _fields(example: Example) -> Mapping[str, Any]:
    # The topic is not required of a record: an empty one reads as "Тема:  Вопрос: ..."
    return {"topic": example.fields.get("topic") or "", "question": example.fields["question"]}


PROMPT = GenerativePrompt(TEMPLATE, MAX_NEW_TOKENS, fields=_fields)
PROMPT.stop = ()  # TAPE generates up to the token budget, with no stop sequence
