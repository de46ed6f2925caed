"""`rueval contamination --run DIR`: an existing run's scores rescored on the items no test flags, beside its full
scores.

An item is flagged when its primary score (contamination_verdict.primary_test) is more member-like than all but
FLAG_SHARE of the reference items: each unseen reference item is flagged with probability FLAG_SHARE at most.
The run's predictions (predictions/<task>.jsonl, as `rueval compare` reads them) are scored again by the task's
metrics on the rows whose item is not flagged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rueval.audit.contamination_verdict import values_of
from rueval.results import scored_examples
from rueval.results.contamination import ItemScores
from rueval.scoring.task_scores import score_task
from rueval.tasks import Task

FLAG_SHARE = 0.05


def flagged(rows: Sequence[ItemScores], references: Sequence[ItemScores], score: str) -> set[str]:
    """The ids of the items whose ``score`` is above the reference items' (1 - FLAG_SHARE) quantile."""
    reference = values_of(references, score)
    if not reference:
        return set()
    threshold = float(np.quantile(reference, 1 - FLAG_SHARE))
    return {row.idx for row in rows if any(value > threshold for value in values_of([row], score))}


def rescored(run_dir: Path, task: Task, flags: set[str], audited: set[str]) -> dict[str, Any]:
    """The run's metrics on every row it scored and on the rows whose item is not flagged, with the counts; a
    note where the run scored items the audit did not read (another split)."""
    examples, predictions = scored_examples(task, run_dir)
    keys = [example.key for example in examples]
    kept = [i for i, key in enumerate(keys) if key not in flags]
    found: dict[str, Any] = {"run": str(run_dir), "rows": len(keys), "flagged_rows": len(keys) - len(kept)}
    unread = sum(key not in audited for key in keys)
    if unread:
        found["note"] = f"{unread} of the run's {len(keys)} rows are no audited item (did the run score another split?)"
    full = score_task(task, examples, predictions).metrics
    subset = score_task(task, [examples[i] for i in kept], [predictions[i] for i in kept]).metrics if kept else {}
    found["metrics"] = {
        metric: {"full": finite_or_none(value), "unflagged": finite_or_none(subset.get(metric))}
        for metric, value in full.items()
    }
    return found


def finite_or_none(value: float | None) -> float | None:
    """A number as JSON holds it: None where it is undefined (NaN, or past floats)."""
    return value if value is not None and math.isfinite(value) else None
