"""The board's private gold: a data directory in the RSG layout whose test files carry the answers.

Each RSG task with a test file is scored; its train split (LiDiRus: TERRa's) teaches the reference
models (majority, heuristics). A submission line is matched to a test item by the id the RSG zip
gives it: the record's idx, a RuCoS query's own idx, a MuSeRC answer's (passage, question, answer)
path (as rueval.run.submission writes them). The gold is read by rueval's own loaders, so the same file
errors apply; it is never served.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.data import Split, load_train, open_data
from rueval.data.records import Example
from rueval.tasks import RSG, Task


def submission_id(example: Example) -> Any:
    """The id a submission line gives the example: a MuSeRC answer's path, a RuCoS query's idx, a record's idx."""
    idx = example.idx
    if isinstance(idx, tuple):
        return idx if len(idx) == 3 else idx[-1]
    return idx


@dataclass(frozen=True)
class GoldTask:
    """One task's labelled test split, its train split, and the test items by submission id."""

    task: Task
    test: Split
    train: Split | None
    ids: dict[Any, int]  # submission id -> position in test.examples

    @property
    def examples(self) -> list[Example]:
        return self.test.examples

    @property
    def nested(self) -> bool:
        """MuSeRC: answers nested under their question and passage in a submission line."""
        return isinstance(self.examples[0].idx, tuple) and len(self.examples[0].idx) == 3


@dataclass(frozen=True)
class Gold:
    """The gold's tasks in the benchmark's order, and a fingerprint of the files they were read from."""

    folder: str
    tasks: dict[str, GoldTask]
    fingerprint: str

    @classmethod
    def load(cls, folder: Path | str) -> Gold:
        """Every RSG task with a test file under ``folder``; an error if none, or if a test file has no
        answers (a public test file given as gold by mistake)."""
        source = open_data(str(folder))
        tasks = {}
        for task in RSG.tasks:
            if not source.has_split(task, "test"):
                continue
            test = source.load(task, "test")
            if not test.labelled:
                raise DataError(test.file, "no answers: the gold needs each task's test file with its labels")
            tasks[task.name] = GoldTask(task, test, load_train(source, task), _ids(test))
        if not tasks:
            folders = ", ".join(task.folder for task in RSG.tasks)
            raise RuevalError(f"--gold {folder}: no RSG test file found (looked for the folders {folders})")
        digest = hashlib.sha256()
        for name, gold in tasks.items():
            digest.update(f"{name}:{gold.test.sha256}:{gold.train.sha256 if gold.train else ''}\n".encode())
        return cls(str(folder), tasks, digest.hexdigest())

    @property
    def complete(self) -> bool:
        """Whether the gold has every RSG task, so that a full submission's total is the RSG total."""
        return len(self.tasks) == len(RSG.tasks)


def _ids(test: Split) -> dict[Any, int]:
    ids: dict[Any, int] = {}
    for position, example in enumerate(test.examples):
        key = submission_id(example)
        if key in ids:
            raise DataError(
                test.file, f"two test items share the submission id {key!r}, so a zip cannot tell them apart"
            )
        ids[key] = position
    return ids
