"""LiDiRus: the diagnostic set is TERRa-style entailment, so it is asked with TERRa's prompt, its
sentences read as TERRa's premise and hypothesis (the renaming its train split borrows)."""

from __future__ import annotations

from rueval.tasks import TASKS
from rueval.tasks.prompts import terra
from rueval.tasks.prompts.common import ChoicePrompt

AS_TERRA = TASKS["lidirus"].train_fields  # TERRa's field -> LiDiRus'

PROMPT = ChoicePrompt(
    terra.TEMPLATE, terra.OPTIONS, fields=lambda example: {name: example.fields[own] for name, own in AS_TERRA.items()}
)
