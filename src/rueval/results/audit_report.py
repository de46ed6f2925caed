"""What an audit writes (audit.json): per task its splits, label distributions, prior-only scores,
artifact lemmas, train/eval duplicates, heuristic coverage and health, as typed records with checked JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rueval.core.files import write_json
from rueval.results.checks import Checker, read_json_file
from rueval.tasks import TASKS

NO_RULE = "no rule fires"


@dataclass(frozen=True)
class RuleCoverage:
    """How one rule does on a labelled split: the examples it fires on, and how many of them it
    gets right. The final row, named NO_RULE, counts the examples no rule fires on (correct 0)."""

    name: str
    description: str
    target: Any
    covered: int
    correct: int


@dataclass(frozen=True)
class Coverage:
    """Every rule's coverage on one labelled split of ``n`` examples (the heuristics paper's Tables 1-7)."""

    n: int
    rules: list[RuleCoverage]


@dataclass
class TaskAudit:
    benchmark: str
    kind: str
    splits: dict[str, dict[str, Any]]  # split -> file, n, labelled, sha256
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)  # split -> label distribution
    prior_only: dict[str, dict[str, Any]] = field(default_factory=dict)  # split -> what the train prior scores
    artifacts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # label -> its lemmas
    duplicates: dict[str, dict[str, Any]] = field(default_factory=dict)  # eval split -> train/eval pairs
    heuristics: dict[str, Coverage] = field(default_factory=dict)  # labelled split -> rule coverage
    health: dict[str, Any] = field(default_factory=dict)  # baselines' levels and the official test set's MDE
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str) -> TaskAudit:
        data = check.obj(data, at)
        sections = {
            name: dict(check.obj(data.get(name, {}), f"{at}.{name}"))
            for name in ("splits", "labels", "prior_only", "artifacts", "duplicates", "health")
        }
        heuristics = {}
        for split, found in check.obj(data.get("heuristics", {}), f"{at}.heuristics").items():
            where = f"{at}.heuristics.{split}"
            found = check.obj(found, where)
            rows = check.required(found, "rules", f"{where}.")
            if not isinstance(rows, list):
                raise check.fail(f"{where}.rules", "expected a list of rules")
            keys = RuleCoverage.__dataclass_fields__
            for i, row in enumerate(rows):
                if set(check.obj(row, f"{where}.rules[{i}]")) != set(keys):
                    raise check.fail(f"{where}.rules[{i}]", f"expected the fields {', '.join(keys)}")
            n = int(check.number(check.required(found, "n", f"{where}."), f"{where}.n"))
            heuristics[split] = Coverage(n, [RuleCoverage(**row) for row in rows])
        return cls(
            benchmark=check.text(check.required(data, "benchmark", f"{at}."), f"{at}.benchmark"),
            kind=check.text(check.required(data, "kind", f"{at}."), f"{at}.kind"),
            heuristics=heuristics,
            notes=list(data.get("notes", [])),
            **sections,
        )


@dataclass
class AuditResult:
    data: str
    created: str
    rueval_version: str
    near_duplicate_threshold: float
    leakage: dict[str, Any] | None
    tasks: dict[str, TaskAudit]
    scale: str = "metrics and expected accuracies are percentages (x100); label shares are fractions"

    def to_json(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "created": self.created,
            "rueval_version": self.rueval_version,
            "scale": self.scale,
            "near_duplicate_threshold": self.near_duplicate_threshold,
            "leakage": self.leakage,
            "tasks": {name: task.to_json() for name, task in self.tasks.items()},
        }

    @classmethod
    def from_json(cls, data: Any, check: Checker) -> AuditResult:
        data = check.obj(data, "")
        tasks = check.obj(check.required(data, "tasks", ""), "tasks")
        for name in tasks:
            if name not in TASKS:
                raise check.fail(f"tasks.{name}", f"unknown task; expected one of: {', '.join(TASKS)}")
        leakage = data.get("leakage")
        return cls(
            data=check.text(check.required(data, "data", ""), "data"),
            created=str(data.get("created", "")),
            rueval_version=str(data.get("rueval_version", "")),
            near_duplicate_threshold=check.number(
                check.required(data, "near_duplicate_threshold", ""), "near_duplicate_threshold"
            ),
            leakage=None if leakage is None else dict(check.obj(leakage, "leakage")),
            tasks={name: TaskAudit.from_json(task, check, f"tasks.{name}") for name, task in tasks.items()},
        )

    @classmethod
    def read(cls, path: Path) -> AuditResult:
        return cls.from_json(read_json_file(path), Checker(str(path)))

    def write(self, path: Path) -> None:
        write_json(path, self.to_json())
