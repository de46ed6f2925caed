"""LiDiRus: the diagnostic set is TERRa-style entailment, so it is asked with TERRa's prompt."""

from __future__ import annotations

from rueval.tasks.prompts import terra
from rueval.tasks.prompts.common import ChoicePrompt

PROMPT = ChoicePrompt(
    terra.TEMPLATE,
    terra.OPTIONS,
    fields=lambda example: {"premise": example.fields["sentence1"], "hypothesis": example.fields["sentence2"]},
)
