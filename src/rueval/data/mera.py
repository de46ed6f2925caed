"""MERA's files, in both layouts MERA has published, for the seven tasks rueval shares with it and
MERA's choice and classification tasks of its own (declared in rueval.data.mera_tasks and
rueval.data.mera_choice_tasks):

- task folders (ai-forever/MERA): `<folder>/<Task>/task.json`, each `{"data": {"train": [...],
  "test": [...]}}` (and "validation" or "dev" where MERA has one);
- the dataset repository (MERA-evaluation/MERA), as `datasets` loads it from a local snapshot:
  `<snapshot>/data/<config>/{train,dev,test}.jsonl`, one record a line (`--data` the snapshot or its
  data/ folder).

A record is `{"instruction", "inputs", "outputs", "meta": {"id", ...}}` in both. Records are converted
into the task's own layout, so the tasks' parsers, metrics and solvers read them as they read the
official files. MERA publishes some tasks with train and a test without answers only: such a test
is predicted, not scored (rueval.data.splits).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.formatting import FormatError
from rueval.data.local import DataSource, PerturbedSplit, Split, parse_examples
from rueval.data.mera_choice_tasks import DIALOG_CONTEXT
from rueval.data.mera_tasks import MERA, MERA_TASKS, NAME, RECORD_FIELD, MeraRecord, MeraTask
from rueval.data.reading import (
    DEFAULT_LIMITS,
    NOT_UNICODE,
    JsonLines,
    ReadLimits,
    decode_line,
    parse_json,
    read_whole,
    surrogate_field,
)
from rueval.data.records import Dataset

TASK_FILE = "task.json"
# rueval's split -> MERA's: the key in a task.json's "data", the name of a snapshot's file (ruModAr's
# labelled split is its public_test)
MERA_SPLITS = {"train": ("train",), "val": ("validation", "dev", "public_test"), "test": ("test",)}
RECORD_KEYS = ("instruction", "inputs", "meta")  # what tells a MERA record from a TAPE one


def is_mera_folder(path: Path) -> bool:
    """A folder of MERA's files in either layout."""
    return path.is_dir() and (_task_folders(path) or _snapshot_data(path) is not None)


def _task_folders(path: Path) -> bool:
    return any(_task_file(path, name) for name in MERA_TASKS.values())


def _task_file(root: Path, mera_name: str) -> Path | None:
    """The task's task.json under ``root``; two folders for the task (`PARus/`, `parus/`) are an error.
    exists(), not is_file(): a task.json that is a folder or a pipe is refused when it is read."""
    found = [
        child / TASK_FILE
        for child in sorted(root.iterdir())
        if child.is_dir() and child.name.lower() == mera_name.lower() and (child / TASK_FILE).exists()
    ]
    if len(found) > 1:
        raise DataError(str(root), f"two folders for MERA's {mera_name}: {found[0].parent} and {found[1].parent}")
    return found[0] if found else None


def _snapshot_data(path: Path) -> Path | None:
    """The data/ folder of a snapshot of MERA's dataset repository (``path`` itself, or its data/):
    the one holding a task's configuration folder whose first record is MERA's."""
    for folder in (path / "data", path):
        if folder.is_dir() and any(_holds_mera_records(folder / task.config) for task in MERA.values()):
            return folder
    return None


def _holds_mera_records(folder: Path) -> bool:
    files = [folder / f"{name}.jsonl" for names in MERA_SPLITS.values() for name in names]
    for file in (f for f in files if f.is_file()):
        with JsonLines(file) as lines:
            for _, raw in lines:
                try:
                    record = json.loads(raw)
                except json.JSONDecodeError:
                    return False
                return isinstance(record, dict) and all(key in record for key in RECORD_KEYS)
    return False


class MeraSource(DataSource):
    """The tasks rueval shares with MERA, read from MERA's files in either layout."""

    def __init__(self, root: Path, limits: ReadLimits = DEFAULT_LIMITS):
        super().__init__([root], f"MERA tasks in {root}", limits)
        self.root = root
        self.snapshot = None if _task_folders(root) else _snapshot_data(root)
        self._documents: dict[str, tuple[dict[str, Any], str]] = {}

    # -- where a task's splits are ------------------------------------------------------------------
    def _mera_split(self, task: Dataset, split: str) -> str | None:
        """MERA's name of the split the task has, or None."""
        if task.name not in MERA_TASKS:
            return None
        names = _mera_names(task, split)
        if self.snapshot is not None:
            folder = self.snapshot / MERA[task.name].config
            return next((name for name in names if (folder / f"{name}.jsonl").exists()), None)
        document = self._document(task)
        if document is None:
            return None
        return next((name for name in names if name in document[0]), None)

    def has_split(self, task: Dataset, split: str) -> bool:
        return self._mera_split(task, split) is not None

    def benchmark_of(self, task: Dataset) -> str:
        return NAME  # MERA's files: its scores are MERA's, never the papers' of the task's own benchmark

    def split_file(self, task: Dataset, split: str, folder: Any = None) -> Path | None:
        name = self._mera_split(task, split)
        if name is None:
            return None
        if self.snapshot is not None:
            return self.snapshot / MERA[task.name].config / f"{name}.jsonl"
        return _task_file(self.root, MERA_TASKS[task.name])

    def _document(self, task: Dataset) -> tuple[dict[str, Any], str] | None:
        """A task.json's {"split": [records]} and the file's hash; None when the folder has no such task."""
        if task.name not in self._documents:
            path = _task_file(self.root, MERA_TASKS[task.name])
            if path is None:
                return None
            raw = read_whole(path, self.limits)
            try:
                document = parse_json(raw.decode("utf-8-sig"), str(path))
            except UnicodeDecodeError as e:
                raise DataError(str(path), f"not UTF-8 text (byte {e.start})") from None
            splits = document.get("data") if isinstance(document, dict) else None
            if not isinstance(splits, dict) or not all(isinstance(v, list) for v in splits.values()):
                raise DataError(str(path), 'expected {"data": {"train": [...], "test": [...]}}', field="data")
            self._documents[task.name] = (splits, hashlib.sha256(raw).hexdigest())
        return self._documents[task.name]

    # -- reading --------------------------------------------------------------------------------------
    def load(self, task: Dataset, split: str, limit: int | None = None) -> Split:
        mera_split = self._mera_split(task, split)
        if mera_split is None:
            raise self.missing(task, split)
        if self.snapshot is not None:
            path = self.split_file(task, split)
            if path is None:  # as _mera_split found it
                raise self.missing(task, split)
            with JsonLines(path, self.limits) as lines:
                records = _converted(task, _json_lines(lines), lines.file, numbered=False)
                groups, complete = parse_examples(task, records, lines.file, limit, f"reading {task.name}/{split}")
                return Split(task, split, groups[None], lines.file, lines.sha256(), complete)
        document = self._document(task)
        if document is None:  # as _mera_split found it
            raise self.missing(task, split)
        splits, sha256 = document
        file = f"{self.split_file(task, split)}#data.{mera_split}"  # "line N" below: the split's record N
        records = _converted(task, enumerate(_dialogues_unfolded(splits[mera_split]), 1), file, numbered=True)
        groups, complete = parse_examples(task, records, file, limit, f"reading {task.name}/{split}")
        split_hash = hashlib.sha256(f"{sha256}/{mera_split}".encode()).hexdigest()
        return Split(task, split, groups[None], file, split_hash, complete)

    def load_perturbed(self, task: Dataset, split: str, limit: int | None = None) -> PerturbedSplit | None:
        return None  # MERA ships no perturbed copies

    def missing(self, task: Dataset, split: str) -> RuevalError:
        if task.name not in MERA_TASKS:
            shared = ", ".join(MERA_TASKS)
            return RuevalError(f"{self.description}: {task.name} is not a MERA task; the tasks rueval shares: {shared}")
        expected = " or ".join(f'"{name}"' for name in _mera_names(task, split) or (split,))
        if self.snapshot is not None:
            folder = self.snapshot / MERA[task.name].config
            if not folder.is_dir():
                return DataError(str(self.snapshot), f"no {MERA[task.name].config}/ for task {task.name}")
            files = " or ".join(f"{name}.jsonl" for name in _mera_names(task, split) or (split,))
            return DataError(str(folder), f"no {split} split: expected {files}")
        if self._document(task) is None:
            return DataError(str(self.root), f"no {MERA_TASKS[task.name]}/{TASK_FILE} for task {task.name}")
        return DataError(
            str(self.split_file(task, "train") or self.root), f"no {split} split: expected {expected} in data"
        )


def _mera_names(task: Dataset, split: str) -> tuple[str, ...]:
    """MERA's names of rueval's split for the task: its train split is the one its task file draws
    demonstrations from (MeraTask.train), never also scored (LCS's public_test; ruModAr's is its val)."""
    train = MERA[task.name].train
    if split == "val":
        return tuple(name for name in MERA_SPLITS[split] if name not in train)
    return train if split == "train" else MERA_SPLITS.get(split, ())


def _dialogues_unfolded(records: list[Any]) -> Iterator[Any]:
    """A task.json's records, a dialogue kept as the list of its records (ruTiE's) unfolded into them."""
    for record in records:
        yield from record if isinstance(record, list) else (record,)


def _json_lines(lines: JsonLines) -> Iterator[tuple[int, Any]]:
    """A snapshot file's (line number, parsed record)."""
    for line_no, raw in lines:
        yield line_no, parse_json(decode_line(raw, lines.file, line_no), lines.file, line_no)


def _converted(
    task: Dataset, records: Iterable[tuple[int, Any]], file: str, numbered: bool
) -> Iterator[tuple[int, bytes]]:
    """MERA's records in the task's own layout, as the split-file parser reads lines: (its number, UTF-8
    JSON). ``numbered``: a task.json's records are named by their number, a file's by their line."""
    mera = MERA[task.name]
    for number, data in records:
        record = MeraRecord(data, file, number, None if numbered else number)
        converted = mera.convert(record, mera.answers)
        converted[RECORD_FIELD] = {key: data.get(key) for key in ("instruction", "inputs", "outputs")}
        try:
            text = json.dumps(converted, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise record.error(surrogate_field(data) or None, NOT_UNICODE) from None
        _check_instruction(record, mera)
        yield number, text


def _check_instruction(record: MeraRecord, mera: MeraTask) -> None:
    """A record's instruction fills with its inputs as MERA fills it (``instruction.format(**inputs)``,
    MeraTask.fill), naming plain fields only, within bounds (rueval.core.formatting)."""
    instruction, inputs = record.data.get("instruction"), record.data.get("inputs")
    if isinstance(instruction, str) and isinstance(inputs, dict | str):
        try:
            mera.fill(instruction.replace(DIALOG_CONTEXT, "") if mera.dialog else instruction, inputs)
        except FormatError as e:
            raise record.error("instruction", str(e)) from None
