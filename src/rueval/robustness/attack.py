"""Scoring a perturbed test set against the original one: the task metrics on the perturbed
examples and the attack success rate (ASR; Wang et al., 2021, as TAPE uses it in Section 5.4 and
Table 4): the share of the originally correct predictions that the perturbation makes wrong. Beside
them, the share of perturbed examples whose text is unchanged (TAPE keeps an example's original
text when no perturbed version passes the semantic filter): a perturbation that changed little
cannot flip much, whatever the model.

"Correct" per example: the gold class for classification tasks; every category right for the
multilabel Ethics tasks (one wrong category makes the example wrong, the strictest reading, as a
perturbation that flips any judgement has succeeded); exact match with a gold answer after
normalisation (EM) for span tasks, with the task's normalisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rueval.core.errors import DataError
from rueval.robustness.targets import target_for
from rueval.scoring.task_scores import is_correct, score_task
from rueval.tasks import Example, Task


def pair_with_originals(
    task: Task, originals: Sequence[Example], perturbed: Sequence[Example], name: str, file: str, strict: bool = True
) -> list[tuple[int, Example]]:
    """(index of its original, perturbed example) for each perturbed example, matched by idx.

    A perturbed copy must carry its original's idx (TAPE's episodes files, which have no idx
    field, match by position within each perturbation) and the same gold answer. With ``strict``
    off (a --limit run, which reads only part of the file) copies without an original are skipped.
    """
    index = {example.key: i for i, example in enumerate(originals)}
    pairs = []
    for example in perturbed:
        i = index.get(example.key)
        if i is None:
            if strict:
                message = f"{name} copy with idx {example.key} has no original {task.name} record with that idx"
                raise DataError(file, message)
            continue
        if originals[i].label != example.label:
            raise DataError(
                file,
                f"{name} copy with idx {example.key} has gold {example.label!r}, its original {originals[i].label!r}; "
                "a perturbed copy must keep its original's idx and answer",
            )
        pairs.append((i, example))
    return pairs


@dataclass(frozen=True)
class PerturbationScore:
    """One perturbation's result on one task (TAPE Table 4): metrics x100 and ASR in percent."""

    metrics: dict[str, float]
    score: float | None  # None when the perturbation could change no example
    original_score: float | None  # the originals of the same examples: the perturbation's effect is the difference
    asr: float | None  # None when no original prediction was correct: there was nothing to attack
    n: int
    attacked: int  # perturbed examples whose original was predicted correctly
    flipped: int  # of those, now predicted wrong
    unchanged: int  # perturbed examples whose text is their original's: the perturbation did nothing there
    test_items: int = 0  # the test set's examples, those without a perturbed copy included

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "score": self.score,
            "original_score": self.original_score,
            "asr": self.asr,
            "n": self.n,
            "originally_correct": self.attacked,
            "made_wrong": self.flipped,
            "unchanged_share": self.unchanged / self.n if self.n else None,
            "test_items": self.test_items,
        }


def score_perturbation(
    task: Task,
    originals: Sequence[Example],
    original_predictions: Sequence[Any],
    pairs: Sequence[tuple[int, Example]],
    predictions: Sequence[Any],
) -> PerturbationScore:
    """Metrics on the perturbed examples and the ASR over their originally correct predictions."""
    if not pairs:
        return PerturbationScore({}, None, None, None, 0, 0, 0, 0, len(originals))
    perturbed = [example for _, example in pairs]
    scores = score_task(task, perturbed, predictions)
    before = score_task(task, [originals[i] for i, _ in pairs], [original_predictions[i] for i, _ in pairs])
    attacked = flipped = 0
    for (i, example), prediction in zip(pairs, predictions, strict=True):
        if is_correct(task, originals[i].label, original_predictions[i]):
            attacked += 1
            flipped += not is_correct(task, example.label, prediction)
    asr = 100 * flipped / attacked if attacked else None
    fields = target_for(task).fields
    unchanged = sum(all(e.fields.get(f) == originals[i].fields.get(f) for f in fields) for i, e in pairs)
    return PerturbationScore(
        scores.metrics, scores.score, before.score, asr, len(perturbed), attacked, flipped, unchanged, len(originals)
    )
