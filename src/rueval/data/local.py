"""Reading tasks from the official layouts: a directory, a zip archive, the bundled samples.

A source is one or more roots (directories or zip archives, walked alike). Under a root, a
task's folder is found by name, case-insensitively, with its aliases, up to three levels deep,
so `combined/RCB/`, `dummy/raw/winograd/` and a bare `RCB/` are all found.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from rueval.errors import DataError, RuevalError
from rueval.progress import progress
from rueval.tasks import Example, Record, Task

Node = Union[Path, zipfile.Path]
SAMPLES_DIR = Path(__file__).parent / "samples"
SEARCH_DEPTH = 3


@dataclass(frozen=True)
class Split:
    """The examples of one split of one task, with the file they came from and its hash."""

    task: Task
    name: str
    examples: list[Example]
    file: str
    sha256: str

    @property
    def labelled(self) -> bool:
        return all(e.label is not None for e in self.examples)


class DataSource:
    """Task folders under one or more roots."""

    def __init__(self, roots: Sequence[Node], description: str):
        self._given_roots = list(roots)
        self.description = description
        self._folders: dict[str, Node | None] = {}

    def roots(self, task: Task) -> Sequence[Node]:
        return self._given_roots

    def folder(self, task: Task) -> Node | None:
        if task.name not in self._folders:
            found = [(depth, node) for root in self.roots(task) for depth, node in _walk(root) if node.name.lower() in task.names]
            # TAPE ships raw and episodes copies of each task: prefer raw, then the shallowest.
            found.sort(key=lambda item: ("episodes" in str(item[1]).lower(), item[0], str(item[1])))
            self._folders[task.name] = found[0][1] if found else None
        return self._folders[task.name]

    def split_file(self, task: Task, split: str) -> Node | None:
        folder = self.folder(task)
        if folder is None or split not in task.split_files:
            return None
        files = {node.name.lower(): node for node in folder.iterdir() if not node.is_dir()}
        for name in task.split_files[split]:
            if name.lower() in files:
                return files[name.lower()]
        return None

    def has_split(self, task: Task, split: str) -> bool:
        return self.split_file(task, split) is not None

    def load(self, task: Task, split: str, limit: int | None = None) -> Split:
        """Parse a split into examples; a DataError names the file, line and field of bad input."""
        node = self.split_file(task, split)
        if node is None:
            raise self.missing(task, split)
        raw = node.read_bytes()
        file = str(node)
        try:
            lines = raw.decode("utf-8-sig").splitlines()
        except UnicodeDecodeError as e:
            raise DataError(file, f"not UTF-8 text (byte {e.start})") from None
        examples: list[Example] = []
        first_line: dict[str, int] = {}
        unlabelled_line = labelled_line = None
        records = 0
        for line_no, line in progress(enumerate(lines, 1), f"reading {task.name}/{split}", total=len(lines)):
            if not line.strip():
                continue
            if limit is not None and records >= limit:
                break
            record = Record(_parse_json(line, file, line_no), file, line_no, records)
            records += 1
            if not _is_original(record, task):
                continue  # a perturbed copy from TAPE's episodes layout: scored by robustness runs only
            for example in task.parse(task, record):
                if example.key in first_line:
                    raise DataError(file, f"duplicate idx {example.key} (first seen on line {first_line[example.key]})", line_no, "idx")
                first_line[example.key] = line_no
                if example.label is None:
                    unlabelled_line = unlabelled_line or line_no
                else:
                    labelled_line = labelled_line or line_no
                examples.append(example)
        if not examples:
            raise DataError(file, f"empty split: no {task.name} records")
        if unlabelled_line and labelled_line:
            raise DataError(file, f"missing gold answer, while line {labelled_line} has one", unlabelled_line, task.label_field)
        return Split(task, split, examples, file, hashlib.sha256(raw).hexdigest())

    def missing(self, task: Task, split: str) -> RuevalError:
        """The error for a split that is not there, naming what was looked for and where."""
        folder = self.folder(task)
        if folder is None:
            names = "/".join(dict.fromkeys((task.folder, *task.names)))
            return DataError(self.description, f"no folder for task {task.name} (looked for {names})")
        if split not in task.split_files:
            return RuevalError(f"{task.name} has no {split} split; its splits are: {', '.join(task.splits)}")
        return DataError(str(folder), f"no {split} split: expected {' or '.join(task.split_files[split])}")


def _walk(root: Node, depth: int = 1) -> Iterator[tuple[int, Node]]:
    for node in sorted(root.iterdir(), key=lambda n: n.name):
        if node.is_dir():
            yield depth, node
            if depth < SEARCH_DEPTH:
                yield from _walk(node, depth + 1)


def _parse_json(line: str, file: str, line_no: int) -> dict:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(file, f"malformed JSON ({e.msg}, column {e.colno})", line_no) from None
    if not isinstance(data, dict):
        raise DataError(file, f"expected a JSON object, got {type(data).__name__}", line_no)
    return data


def _is_original(record: Record, task: Task) -> bool:
    """TAPE's episodes layout marks originals with the task's name in `perturbation`."""
    marker = record.data.get("perturbation")
    return marker is None or str(marker).lower() in {*task.names, "original", ""}


def open_directory_or_zip(spec: str) -> DataSource:
    path = Path(spec).expanduser()
    if path.is_dir():
        return DataSource([path], str(path))
    if path.is_file() and zipfile.is_zipfile(path):
        return DataSource([zipfile.Path(path)], str(path))
    if path.exists():
        raise RuevalError(f"--data {spec}: not a directory or a zip archive")
    raise RuevalError(f"--data {spec}: no such directory or zip file")


def bundled_samples() -> DataSource:
    return DataSource([SAMPLES_DIR], "bundled samples")
