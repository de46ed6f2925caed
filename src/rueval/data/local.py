"""Reading tasks from the official layouts: a directory, a zip archive, the bundled samples.

A source is one or more roots (directories or zip archives, walked alike). Under a root, a
task's folder is found by name, case-insensitively, with its aliases, up to three levels deep,
so `combined/RCB/`, `dummy/raw/winograd/` and a bare `RCB/` are all found.

Split files are read as a stream, line by line (a zip member is inflated as it is read, never
whole), hashed as they go; a line longer than ``max_line_bytes`` is refused before it is parsed,
so hostile input (a zip bomb, a file with no line breaks) cannot take more memory than that.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Self

from rueval.data.records import Dataset, Example, Record
from rueval.errors import DataError, RuevalError
from rueval.progress import progress

Node = Path | zipfile.Path
SAMPLES_DIR = Path(__file__).parent / "samples"
SEARCH_DEPTH = 3
# TAPE's two copies of each dataset: the episodes files are its D_test and D_train (the test sets its
# tables score, e.g. Ethics-1: 1,000 test and 59 train items, with the few-shot `episode` lists); raw
# holds every record (1,436 / 254).
TAPE_SETS = ("episodes", "raw")
MAX_LINE_BYTES = 20 * 2**20  # the longest JSON line read (official MuSeRC lines, the longest, are tens of KB)


@dataclass(frozen=True)
class Split:
    """The examples of one split of one task, with the file they came from and its hash."""

    task: Dataset
    name: str
    examples: list[Example]
    file: str
    sha256: str

    @property
    def labelled(self) -> bool:
        return all(e.label is not None for e in self.examples)


@dataclass(frozen=True)
class PerturbedSplit:
    """A split file of TAPE's episodes layout: its originals, and its perturbed copies grouped by
    the name in their `perturbation` field (for robustness runs)."""

    task: Dataset
    name: str
    file: str
    originals: list[Example]
    perturbed: dict[str, list[Example]]


class DataSource:
    """Task folders under one or more roots."""

    def __init__(
        self,
        roots: Sequence[Node],
        description: str,
        max_line_bytes: int = MAX_LINE_BYTES,
        tape_set: str = "episodes",
    ):
        if tape_set not in TAPE_SETS:
            raise RuevalError(f"--tape-set {tape_set}: expected one of: {', '.join(TAPE_SETS)}")
        self._given_roots = list(roots)
        self.description = description
        self.max_line_bytes = max_line_bytes
        self.tape_set = tape_set
        self._folders: dict[str, list[Node]] = {}

    def roots(self, task: Dataset) -> Sequence[Node]:
        return self._given_roots

    def folders(self, task: Dataset) -> list[Node]:
        """Every folder of the task under the roots, best first; a task with a folder of its own (a YAML
        task's data) is read from there."""
        if task.data_dir:
            return [Path(task.data_dir)]
        if task.name not in self._folders:
            found = [
                (depth, node)
                for root in self.roots(task)
                for depth, node in _walk(root)
                if node.name.lower() in task.names
            ]
            # TAPE ships raw and episodes copies of each task: the chosen set first, then the shallowest.
            found.sort(key=lambda item: (tape_set_of(str(item[1])) not in (None, self.tape_set), item[0], str(item[1])))
            self._folders[task.name] = [node for _, node in found]
        return self._folders[task.name]

    def folder(self, task: Dataset) -> Node | None:
        folders = self.folders(task)
        return folders[0] if folders else None

    def split_file(self, task: Dataset, split: str, folder: Node | None = None) -> Node | None:
        folder = folder or self.folder(task)
        if folder is None or split not in task.split_files:
            return None
        files = {node.name.lower(): node for node in _listing(folder) if not node.is_dir()}
        for name in task.split_files[split]:
            if name.lower() in files:
                return files[name.lower()]
        return None

    def has_split(self, task: Dataset, split: str) -> bool:
        return self.split_file(task, split) is not None

    def load(self, task: Dataset, split: str, limit: int | None = None) -> Split:
        """Parse a split into examples; a DataError names the file, line and field of bad input."""
        node = self.split_file(task, split)
        if node is None:
            raise self.missing(task, split)
        with JsonLines(node, self.max_line_bytes) as lines:
            examples = _parse_examples(task, lines, limit, f"reading {task.name}/{split}")[None]
            return Split(task, split, examples, str(node), lines.sha256())

    def load_perturbed(self, task: Dataset, split: str, limit: int | None = None) -> PerturbedSplit | None:
        """The perturbed copies in a split file of TAPE's episodes layout, grouped by perturbation
        name, with the originals of the same file; None if no folder of the task has any. Episodes
        folders are searched first (a raw folder beside them holds no perturbed copies)."""
        for folder in sorted(self.folders(task), key=lambda node: "episodes" not in str(node).lower()):
            node = self.split_file(task, split, folder)
            if node is None:
                continue
            with JsonLines(node, self.max_line_bytes) as lines:
                groups = _parse_examples(task, lines, limit, f"reading {task.name}/{split}", with_perturbed=True)
            originals = groups.pop(None)
            if groups:
                return PerturbedSplit(task, split, str(node), originals, groups)
        return None

    def missing(self, task: Dataset, split: str) -> RuevalError:
        """The error for a split that is not there, naming what was looked for and where."""
        folder = self.folder(task)
        if folder is None:
            names = "/".join(dict.fromkeys((task.folder, *task.names)))
            return DataError(self.description, f"no folder for task {task.name} (looked for {names})")
        if split not in task.split_files:
            return RuevalError(f"{task.name} has no {split} split; its splits are: {', '.join(task.splits)}")
        return DataError(str(folder), f"no {split} split: expected {' or '.join(task.split_files[split])}")


def _parse_examples(
    task: Dataset, lines: JsonLines, limit: int | None, description: str, with_perturbed: bool = False
) -> dict[str | None, list[Example]]:
    """The examples of a split file: originals under None and, if asked, perturbed copies under
    their perturbation's name. ``limit`` counts records of every kind, as they come in the file."""
    file = lines.file
    groups: dict[str | None, list[Example]] = {None: []}
    first_line: dict[tuple[str | None, str], int] = {}
    unlabelled_line: dict[str | None, int] = {}
    labelled_line: dict[str | None, int] = {}
    positions: dict[str | None, int] = defaultdict(int)
    records = 0
    for line_no, line in progress(lines, description):
        if not line.strip():
            continue
        if limit is not None and records >= limit:
            break
        data = parse_json_line(line, file, line_no)
        # A record without an idx field is numbered by its place among the records of its group
        # (originals, or one perturbation's copies), so a copy matches its original by position.
        name = _perturbation_name(data, task)
        records += 1
        if name is not None and not with_perturbed:
            continue  # a perturbed copy from TAPE's episodes layout: scored by robustness runs only
        group = groups.setdefault(name, [])
        record = Record(data, file, line_no, positions[name])
        positions[name] += 1
        for example in task.parse(record):
            if (name, example.key) in first_line:
                seen = first_line[name, example.key]
                raise DataError(file, f"duplicate idx {example.key} (first seen on line {seen})", line_no, "idx")
            first_line[name, example.key] = line_no
            (unlabelled_line if example.label is None else labelled_line).setdefault(name, line_no)
            group.append(example)
    if not groups[None]:
        raise DataError(file, f"empty split: no {task.name} records")
    for name in groups:
        if name in unlabelled_line and name in labelled_line:
            message = f"missing gold answer, while line {labelled_line[name]} has one"
            raise DataError(file, message, unlabelled_line[name], task.label_field)
    return groups


def _walk(root: Node, depth: int = 1) -> Iterator[tuple[int, Node]]:
    for node in sorted(_listing(root), key=lambda n: n.name):
        if node.is_dir():
            yield depth, node
            if depth < SEARCH_DEPTH:
                yield from _walk(node, depth + 1)


def _listing(folder: Node) -> list[Node]:
    with _reading(str(folder)):
        return list(folder.iterdir())


@contextmanager
def _reading(file: str) -> Iterator[None]:
    """Failures to read a file or folder as a DataError naming it."""
    try:
        yield
    except PermissionError:
        raise DataError(file, "permission denied") from None
    except FileNotFoundError:
        if os.path.islink(file):
            raise DataError(file, f"broken symbolic link (to {os.readlink(file)})") from None
        raise DataError(file, "no such file (removed while reading?)") from None
    except (zipfile.BadZipFile, zlib.error, EOFError) as e:
        raise DataError(file, f"corrupt zip data ({e or type(e).__name__})") from None
    except OSError as e:
        raise DataError(file, f"cannot read: {e.strerror or e}") from None


class JsonLines:
    """A split file read as a stream: iterating gives (line number, text) of every line, each at
    most ``max_line_bytes`` long; ``sha256`` is the whole file's hash (the rest is read for it)."""

    def __init__(self, node: Node, max_line_bytes: int = MAX_LINE_BYTES):
        self.node, self.file, self.max_line_bytes = node, str(node), max_line_bytes
        self._digest = hashlib.sha256()
        self._stream: BinaryIO | None = None

    def __enter__(self) -> Self:
        with _reading(self.file):
            self._stream = self.node.open("rb")
        return self

    def __exit__(self, *exc) -> None:
        self._stream.close()

    def __iter__(self) -> Iterator[tuple[int, str]]:
        line_no = 0
        while True:
            with _reading(self.file):
                raw = self._stream.readline(self.max_line_bytes + 1)
            if not raw:
                return
            line_no += 1
            self._digest.update(raw)
            raw = raw.rstrip(b"\r\n")
            if len(raw) > self.max_line_bytes:
                raise DataError(self.file, f"line longer than {self.max_line_bytes} bytes: not read", line_no)
            yield line_no, _decode_line(raw, self.file, line_no)

    def sha256(self) -> str:
        with _reading(self.file):
            for block in iter(lambda: self._stream.read(1 << 20), b""):
                self._digest.update(block)
        return self._digest.hexdigest()


def _decode_line(raw: bytes, file: str, line_no: int) -> str:
    """One line of UTF-8 text (a byte-order mark may start the first); a DataError if it is not UTF-8."""
    try:
        return raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
    except UnicodeDecodeError as e:
        raise DataError(file, f"not UTF-8 text (byte {e.start} of the line)", line_no) from None


def decode_lines(raw: bytes, file: str) -> list[str]:
    """The lines of a UTF-8 file (a byte-order mark is allowed); a DataError if it is not UTF-8."""
    try:
        return raw.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(file, f"not UTF-8 text (byte {e.start})") from None


def parse_json_line(line: str, file: str, line_no: int) -> dict:
    """One JSON Lines record, which must be an object; a DataError naming the file and line if not."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(file, f"malformed JSON ({e.msg}, column {e.colno})", line_no) from None
    if not isinstance(data, dict):
        raise DataError(file, f"expected a JSON object, got {type(data).__name__}", line_no)
    return data


def _perturbation_name(data: dict, task: Dataset) -> str | None:
    """TAPE's episodes layout marks originals with the task's name in `perturbation` (None here),
    perturbed copies with the perturbation's name."""
    marker = data.get("perturbation")
    if marker is None or str(marker).lower() in {*task.names, "original", ""}:
        return None
    return str(marker).lower()


def tape_set_of(path: str) -> str | None:
    """Which of TAPE's sets a file or folder belongs to ("episodes" or "raw"), from its path; None outside them."""
    parts = [part.lower() for part in Path(path).parts]
    return next((name for name in TAPE_SETS if name in parts), None)


def open_directory_or_zip(spec: str, max_line_bytes: int = MAX_LINE_BYTES, tape_set: str = "episodes") -> DataSource:
    path = Path(spec).expanduser()
    if path.is_dir():
        return DataSource([path], str(path), max_line_bytes, tape_set)
    if path.is_file():
        with _reading(str(path)):
            path.open("rb").close()  # an unreadable file is named as such, not as "not a zip"
            if zipfile.is_zipfile(path):
                return DataSource([zipfile.Path(path)], str(path), max_line_bytes, tape_set)
    if path.exists():
        raise RuevalError(f"--data {spec}: not a directory or a zip archive")
    raise RuevalError(f"--data {spec}: no such directory or zip file")


def bundled_samples() -> DataSource:
    return DataSource([SAMPLES_DIR], "bundled samples")
