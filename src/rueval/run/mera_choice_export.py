"""The submission entries of MERA's choice and classification tasks of its own (rueval.data.mera_choice_tasks),
in the shape of the records' own outputs, as MERA writes them (MERA-Evaluation/MERA, commit 9cf05b2:
scripts/log_to_submission.py; its scorer, modules/scoring/src/tasks/):

- MERA's answer text: ruMMLU, MaMuRAMu, MathLogicQA a letter, ruHHH and ruHateSpeech "1"/"2", BPS
  "0"/"1", LCS "0".."9";
- ruEthics: the one answer under each criterion, `{"virtue": "1", "law": "1", ...}`;
- ruTiE: "1"/"2", its meta the question's `{"dialog_id", "question_id"}`, which the scorer keys it by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rueval.data.mera_choice_tasks import CHOICE_TASKS, DIALOG_ID
from rueval.tasks import Example

DIALOG_TURN = ("dialog_id", "question_id")


def choice_entry(task: str, example: Example, prediction: Any) -> dict[str, Any]:
    """The entry of one test record of the task (rueval's name) for its prediction."""
    mera = CHOICE_TASKS[task]
    text = {label: answer for answer, label in mera.answers.items()}
    if mera.criteria:
        return {
            "outputs": {c: text[p] for c, p in zip(mera.criteria, prediction, strict=True)},
            "meta": {"id": example.idx},
        }
    if mera.dialog:
        return {"outputs": text[prediction], "meta": {name: example.fields[name] for name in DIALOG_TURN}}
    return {"outputs": text.get(prediction, prediction), "meta": {"id": example.idx}}


def written_id(entry: Mapping[str, Any]) -> Any:
    """The id an entry is written for: its meta.id, or a ruTiE question's "dialog_id:D;question_id:Q"."""
    meta = entry["meta"]
    return meta["id"] if "id" in meta else DIALOG_ID.format(**{name: meta[name] for name in DIALOG_TURN})
