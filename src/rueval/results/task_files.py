"""A task-file run's rows (OUT/predictions/<task>.jsonl): one per document lm-eval scored, with its
``doc_id`` (as ``idx``), the filtered responses (per lm-eval filter), the target, and each metric's
per-sample value as lm-eval's aggregation takes it (a number for a mean; F1's pair, BLEU's texts).
`rueval compare` pairs two runs by ``idx`` on these values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.files import write_jsonl
from rueval.data.local import decode_lines, parse_json_line


def predictions_file(run_dir: Path, task: str) -> Path:
    return run_dir / "predictions" / f"{task}.jsonl"


@dataclass(frozen=True)
class SampleScores:
    """One document of a task file as lm-eval scored it."""

    idx: int  # lm-eval's doc_id
    prediction: Mapping[str, Any]  # filter -> the filtered responses
    gold: Any  # lm-eval's target
    values: Mapping[str, Any]  # metric (as the task's result names it) -> its per-sample value

    def to_json(self) -> dict[str, Any]:
        return {"idx": self.idx, "prediction": dict(self.prediction), "gold": self.gold, "values": dict(self.values)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], metrics: Sequence[str], file: str, line: int) -> SampleScores:
        for key in ("idx", "prediction", "gold", "values"):
            if key not in data:
                raise DataError(file, "missing", line=line, field=key)
        idx, values = data["idx"], data["values"]
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise DataError(file, f"expected lm-eval's doc_id, a whole number; got {idx!r:.60}", line=line, field="idx")
        for key in ("prediction", "values"):
            if not isinstance(data[key], dict):
                raise DataError(file, f"expected an object, got {data[key]!r:.60}", line=line, field=key)
        for metric in metrics:
            if metric not in values:
                raise DataError(file, "missing: the task's result has this metric", line=line, field=f"values.{metric}")
        return cls(idx, data["prediction"], data["gold"], values)


def write_sample_scores(path: Path, rows: Iterable[SampleScores]) -> None:
    write_jsonl(path, (row.to_json() for row in rows))


def read_sample_scores(path: Path, metrics: Sequence[str]) -> list[SampleScores]:
    """A task-file run's predictions/<task>.jsonl, every row checked to carry ``metrics``, ordered by idx."""
    if not path.is_file():
        raise RuevalError(f"{path}: missing; the run lists {path.stem} but has no per-sample values for it")
    rows = [
        SampleScores.from_json(parse_json_line(line, str(path), number), metrics, str(path), number)
        for number, line in enumerate(decode_lines(path.read_bytes(), str(path)), 1)
        if line.strip()
    ]
    if not rows:
        raise DataError(str(path), "has no rows")
    seen: set[int] = set()
    for number, row in enumerate(rows, 1):
        if row.idx in seen:
            raise DataError(str(path), f"doc_id {row.idx} appears twice", line=number, field="idx")
        seen.add(row.idx)
    return sorted(rows, key=lambda row: row.idx)
