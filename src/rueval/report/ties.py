"""Tied with the leader: the ranked runs of a leaderboard that the best-ranked run does not beat beyond chance.

The leader is the best-ranked run (papers' rows have no predictions to test). Every other ranked run's total is
compared with the leader's by the paired bootstrap of the total: each task of the total resampled over its own
items, both runs on the same resamples (rueval.scoring.stats.paired_draws), and the board's total computed on
every resample. The p-values of these comparisons are corrected together by Holm's method
(rueval.scoring.decisions.holm); a run whose corrected p-value is 0.05 or more is tied with the leader.
The runs need their predictions files, of the same examples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rueval.core.errors import RuevalError
from rueval.report.compare import paired_examples
from rueval.report.reference import ScoreRow
from rueval.scoring.decisions import ALPHA, holm, total_difference
from rueval.scoring.stats import paired_draws
from rueval.tasks import TASKS, Total


@dataclass(frozen=True)
class Ties:
    """The leader's run directory, each other ranked run's Holm-corrected p-value against it, and why none
    were computed ("" when they were)."""

    leader: str = ""
    adjusted: tuple[tuple[str, float], ...] = ()
    missing: str = ""

    def mark(self, source: str) -> str:
        """'leader', 'tied' or '' for a run's directory."""
        if source == self.leader:
            return "leader"
        return "tied" if dict(self.adjusted).get(source, 0.0) >= ALPHA else ""


def ties_with_leader(ranked: Sequence[ScoreRow], total: Total) -> Ties:
    """The ties among the ranked runs of one board (best first): zero-shot runs' rows, whose totals their
    predictions files give."""
    runs = [row for row in ranked if not row.is_reference and row.k is None]
    if len(runs) < 2:
        return Ties(runs[0].source if runs else "")
    leader, others = Path(runs[0].source), runs[1:]
    try:
        p_values = [_total_p_value(total, leader, Path(row.source)) for row in others]
    except RuevalError as e:
        return Ties(missing=str(e))
    adjusted = holm(p_values)
    return Ties(str(leader), tuple((row.source, p) for row, p in zip(others, adjusted, strict=True)))


def _total_p_value(total: Total, leader: Path, other: Path) -> float:
    """The paired-bootstrap p-value of the leader's total minus the other run's."""
    paired = []
    for name in total.tasks:
        task = TASKS[name]
        paired.append((task, paired_draws(task, *paired_examples(task, leader, other))))
    return total_difference(total, paired).p_value
