"""What `rueval contamination` writes, as typed records with checked JSON: OUT/contamination/<task>.jsonl
(one ItemScores per item) and OUT/contamination.json (ContaminationResult: per task each score's test
against the reference items, the verdict in words, and with --members each score's AUROC). A folder of its
own, not a run folder: no run's files or checksums change."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.files import write_json, write_jsonl
from rueval.results.checks import Checker, read_json_file

EVIDENCE = "evidence of contamination"
NO_EVIDENCE = "no evidence"  # never "clean": absence of evidence is all a membership test can show
VERDICTS = (EVIDENCE, NO_EVIDENCE)
SUMMARY = "contamination.json"
ITEMS_FOLDER = "contamination"


@dataclass(frozen=True)
class ItemScores:
    """One item's scores; a score that does not apply (no twin, no distribution, no corpus) is absent."""

    idx: str
    min_k: float
    min_k_pp: float | None = None
    zlib: float | None = None
    ppl: float | None = None
    perturbation: float | None = None
    ngram_overlap: float | None = None  # --corpus: the share of the item's 13-grams found in the corpus

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if value is not None}

    def value(self, score: str) -> float | None:
        value: float | None = getattr(self, score)
        return value


@dataclass(frozen=True)
class ScoreTest:
    """One score's distribution on the task's items against the reference items: the one-sided Mann-Whitney
    U test that the items score more like members (MEMBER_SIGN's direction) than the references."""

    score: str
    items: int
    references: int
    item_median: float
    reference_median: float
    p_value: float
    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise RuevalError(f"verdict {self.verdict!r}: expected one of {', '.join(VERDICTS)}")


@dataclass(frozen=True)
class MembershipAUC:
    """With --members: how well one score tells the known members from the other items."""

    score: str
    members: int
    non_members: int
    auroc: float
    tpr_at_5_fpr: float  # the true-positive rate at a false-positive rate of at most 5%


@dataclass(frozen=True)
class TaskContamination:
    split: str
    items: int
    reference: str  # "perturbed twins (eda_swap)" or "split val"
    references: int
    tests: tuple[ScoreTest, ...]
    primary: str  # the score whose test gives the task's verdict
    verdict: str
    membership: tuple[MembershipAUC, ...] = ()
    notes: tuple[str, ...] = ()
    corpus: dict[str, Any] = field(default_factory=dict)  # --corpus: the 13-gram overlap's figures
    guessing: dict[str, Any] = field(default_factory=dict)  # --guessing: TS-Guessing's rate, chance and p-value
    run_scores: dict[str, Any] = field(default_factory=dict)  # --run: metric -> full and unflagged-subset values

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str) -> TaskContamination:
        data = check.obj(data, at)
        made = {
            "tests": tuple(
                check.fields(ScoreTest, row, f"{at}.tests[{i}].")
                for i, row in enumerate(check.typed(list, data.get("tests", []), f"{at}.tests"))
            ),
            "membership": tuple(
                check.fields(MembershipAUC, row, f"{at}.membership[{i}].")
                for i, row in enumerate(check.typed(list, data.get("membership", []), f"{at}.membership"))
            ),
        }
        rest = {key: value for key, value in data.items() if key not in made}
        return check.fields(cls, rest, f"{at}.", made)


@dataclass(frozen=True)
class ContaminationResult:
    model: str
    data: str
    text: str  # "fields" (the record's string fields) or "prompt"
    k: float
    created: str
    rueval_version: str
    tasks: dict[str, TaskContamination]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "tasks": {name: task.to_json() for name, task in self.tasks.items()}}

    @classmethod
    def from_json(cls, data: Any, check: Checker) -> ContaminationResult:
        data = check.obj(data, "")
        tasks = check.obj(check.required(data, "tasks", ""), "tasks")
        made = {
            "tasks": {name: TaskContamination.from_json(task, check, f"tasks.{name}") for name, task in tasks.items()}
        }
        return check.fields(cls, {key: value for key, value in data.items() if key != "tasks"}, "", made)

    @classmethod
    def read(cls, folder: Path) -> ContaminationResult:
        path = folder / SUMMARY
        return cls.from_json(read_json_file(path), Checker(str(path)))

    def write(self, folder: Path) -> None:
        write_json(folder / SUMMARY, self.to_json())


def write_item_scores(folder: Path, task: str, rows: list[ItemScores]) -> Path:
    path = folder / ITEMS_FOLDER / f"{task}.jsonl"
    write_jsonl(path, (row.to_json() for row in rows))
    return path


def read_item_scores(folder: Path, task: str) -> list[ItemScores]:
    path = folder / ITEMS_FOLDER / f"{task}.jsonl"
    rows = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                data = json.loads(line)
            except ValueError as e:
                raise DataError(str(path), f"not JSON ({e})", line_no) from None
            rows.append(Checker(f"{path}:{line_no}").fields(ItemScores, data, ""))
    return rows
