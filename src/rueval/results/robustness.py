"""The robustness summary the TAPE paper's tables lack, per task: the worst score over all
perturbations (and which one), and the share of test items each perturbation left as they were
(TAPE's framework keeps an example's original text when no perturbed candidate passes the
constraints and the semantic filter, so a perturbation may change little of a test set)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RobustnessSummary:
    """Derived from a task's ``perturbations`` results (results.json); None where there are none."""

    worst: str | None  # the perturbation with the lowest score; None when none could change an example
    worst_score: float | None
    worst_original_score: float | None  # the same examples unperturbed
    unchanged: dict[str, float | None]  # perturbation -> share of test items it left unchanged

    @classmethod
    def of(cls, perturbations: Mapping[str, Mapping[str, Any]]) -> RobustnessSummary | None:
        if not perturbations:
            return None
        scored = {name: attack for name, attack in perturbations.items() if attack.get("score") is not None}
        worst = min(scored, key=lambda name: scored[name]["score"]) if scored else None
        return cls(
            worst=worst,
            worst_score=scored[worst]["score"] if worst else None,
            worst_original_score=scored[worst].get("original_score") if worst else None,
            unchanged={name: unchanged_items_share(attack) for name, attack in perturbations.items()},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "worst": {
                "perturbation": self.worst,
                "score": self.worst_score,
                "original_score": self.worst_original_score,
            },
            "unchanged_share": self.unchanged,
        }


def unchanged_items_share(attack: Mapping[str, Any]) -> float | None:
    """The share of the test items a perturbation left as they were: its copies identical to their
    original, and the items it made no copy of. Results written before the test set's size was
    recorded give the share among the copies."""
    items, n = attack.get("test_items"), attack.get("n") or 0
    if not items:
        return attack.get("unchanged_share")
    identical = round((attack.get("unchanged_share") or 0) * n)
    return (identical + max(0, items - n)) / items
