"""Reading tasks from the official layouts: a directory, a zip archive, the bundled samples.

A source is one or more roots (directories or zip archives, walked alike). Under a root, a
task's folder is found by name, case-insensitively, with its aliases, up to three levels deep,
so `combined/RCB/`, `dummy/raw/winograd/` and a bare `RCB/` are all found; two folders for one
task at the same depth (`a/PARus/`, `b/parus/`) are an error, never a silent pick.

Split files are read within bounds (rueval.data.reading); each record's id is checked by its
layout's rule (the task's ``layout.ids``) and is unique in its split.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.progress import progress
from rueval.data.reading import (
    DEFAULT_LIMITS,
    JsonLines,
    Node,
    ReadLimits,
    check_unicode,
    decode_line,
    parse_json,
    reading,
)
from rueval.data.records import Dataset, Example, IdRule, Record, RecordFields

SAMPLES_DIR = Path(__file__).parent / "samples"
SEARCH_DEPTH = 3
# TAPE's two copies of each dataset: the episodes files are its D_test and D_train (the test sets its
# tables score, e.g. Ethics-1: 1,000 test and 59 train items, with the few-shot `episode` lists); raw
# holds every record (1,436 / 254).
TAPE_SETS = ("episodes", "raw")


@dataclass(frozen=True)
class Split:
    """The examples of one split of one task, with the file they came from and its hash."""

    task: Dataset
    name: str
    examples: list[Example]
    file: str
    sha256: str
    complete: bool = True  # every record was read: a --limit short of the file's end leaves it False

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
    """Task folders under one or more roots; their files are read within ``limits``."""

    def __init__(
        self,
        roots: Sequence[Node],
        description: str,
        limits: ReadLimits = DEFAULT_LIMITS,
        tape_set: str = "episodes",
    ):
        if tape_set not in TAPE_SETS:
            raise RuevalError(f"--tape-set {tape_set}: expected one of: {', '.join(TAPE_SETS)}")
        self._given_roots = list(roots)
        self.description = description
        self.limits = limits
        self.tape_set = tape_set
        self._folders: dict[str, list[Node]] = {}

    def roots(self, task: Dataset) -> Sequence[Node]:
        return self._given_roots

    def benchmark_of(self, task: Dataset) -> str:
        """The benchmark whose files the task is read from: its own, unless the source holds another's."""
        return task.benchmark

    def folders(self, task: Dataset) -> list[Node]:
        """Every folder of the task under the roots, best first (two equally good ones are an error)."""
        if task.name not in self._folders:
            # TAPE ships raw and episodes copies of each task: the chosen set first, then the shallowest.
            found = sorted(
                ((tape_set_of(str(node)) not in (None, self.tape_set), depth), str(node), node)
                for root in self.roots(task)
                for depth, node in _walk(root)
                if node.name.lower() in task.names
            )
            if len(found) > 1 and found[0][0] == found[1][0]:
                raise DataError(
                    self.description,
                    f"two folders for task {task.name}: {found[0][1]} and {found[1][1]}; "
                    "keep one, or point --data at the one to use",
                )
            self._folders[task.name] = [node for _, _, node in found]
        return self._folders[task.name]

    def folder(self, task: Dataset) -> Node | None:
        folders = self.folders(task)
        return folders[0] if folders else None

    def split_file(self, task: Dataset, split: str, folder: Node | None = None) -> Node | None:
        """The split's file in the task's folder. Whatever has the file's name is it: a folder or a
        pipe of that name is refused when it is read, never taken for a missing split."""
        folder = folder or self.folder(task)
        if folder is None or split not in task.split_files:
            return None
        entries = {node.name.lower(): node for node in _listing(folder)}
        return next((entries[n.lower()] for n in task.split_files[split] if n.lower() in entries), None)

    def has_split(self, task: Dataset, split: str) -> bool:
        return self.split_file(task, split) is not None

    def load(self, task: Dataset, split: str, limit: int | None = None) -> Split:
        """Parse a split into examples; a DataError names the file, line and field of bad input."""
        node = self.split_file(task, split)
        if node is None:
            raise self.missing(task, split)
        with JsonLines(node, self.limits) as lines:
            groups, complete = parse_examples(task, lines, lines.file, limit, f"reading {task.name}/{split}")
            return Split(task, split, groups[None], str(node), lines.sha256(), complete)

    def load_perturbed(self, task: Dataset, split: str, limit: int | None = None) -> PerturbedSplit | None:
        """The perturbed copies in a split file of TAPE's episodes layout, grouped by perturbation
        name, with the originals of the same file; None if no folder of the task has any. Episodes
        folders are searched first (a raw folder beside them holds no perturbed copies)."""
        for folder in sorted(self.folders(task), key=lambda node: "episodes" not in str(node).lower()):
            node = self.split_file(task, split, folder)
            if node is None:
                continue
            with JsonLines(node, self.limits) as lines:
                description = f"reading {task.name}/{split}"
                groups, _ = parse_examples(task, lines, lines.file, limit, description, with_perturbed=True)
            originals = groups.pop(None)
            perturbed = {name: copies for name, copies in groups.items() if name is not None}
            if perturbed:
                return PerturbedSplit(task, split, str(node), originals, perturbed)
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


def parse_examples(
    task: Dataset,
    lines: Iterable[tuple[int, bytes]],
    file: str,
    limit: int | None,
    description: str,
    with_perturbed: bool = False,
) -> tuple[dict[str | None, list[Example]], bool]:
    """The examples of a split file's (line number, UTF-8 JSON) lines: originals under None and, if
    asked, perturbed copies under their perturbation's name; and whether every record was read.
    ``limit`` counts records of every kind, as they come in the file. Ids are checked per group (SplitIds)."""
    groups: dict[str | None, list[Example]] = {None: []}
    ids: dict[str | None, SplitIds] = {}
    rule = task.layout.ids
    unlabelled_line: dict[str | None, int] = {}
    labelled_line: dict[str | None, int] = {}
    records, complete = 0, True
    for line_no, raw in progress(lines, description):
        line = decode_line(raw, file, line_no)
        if not line.strip():
            continue
        if limit is not None and records >= limit:
            complete = False  # a record beyond the limit
            break
        data = parse_json_line(line, file, line_no)
        name = _perturbation_name(data, task)
        records += 1
        if name is not None and not with_perturbed:
            continue  # a perturbed copy from TAPE's episodes layout: scored by robustness runs only
        group = groups.setdefault(name, [])
        group_ids = ids.setdefault(name, SplitIds(rule, file))
        # Without ids, a record is numbered by its place among the records of its group (originals,
        # or one perturbation's copies), so a copy matches its original by position.
        examples = task.parse(Record(data, file, line_no, group_ids.records, ids=rule))
        group_ids.add_record(data, line_no)
        for example in examples:
            if example.fields is data:  # a flat record's own fields: kept as its text (RecordFields)
                example = replace(example, fields=RecordFields(raw))
            group_ids.add_example(example, line_no)
            (unlabelled_line if example.label is None else labelled_line).setdefault(name, line_no)
            group.append(example)
    if not groups[None]:
        raise DataError(file, f"empty split: no {task.name} records")
    for name in groups:
        if name in unlabelled_line and name in labelled_line:
            message = f"missing gold answer, while line {labelled_line[name]} has one"
            raise DataError(file, message, unlabelled_line[name], task.label_field)
    return groups, complete


class SplitIds:
    """The ids of one group of a split file (its originals, or one perturbation's copies), checked
    as they come: every record has its layout's id or none does (then positions number them), ids
    are of one type, and no id repeats: neither an example's whole idx (a MuSeRC answer's path), nor
    a record's own idx, nor a MuSeRC question's idx within its passage (its answers stay together)."""

    def __init__(self, rule: IdRule, file: str):
        self.rule, self.file = rule, file
        self.records = 0
        self._first: tuple[int, str | None, type | None] | None = None  # line, id field, id type of the first record
        self._lines: dict[Any, int] = {}  # example idx -> its line
        self._record_lines: dict[Any, int] = {}  # nested layouts: record idx -> its line
        self._groups: set[Any] = set()
        self._group: Any = None
        self._field = "idx"  # the id field of the record being read

    def add_record(self, data: Mapping[str, Any], line_no: int) -> None:
        field = self.rule.field_in(data)
        kind = type(data[field]) if field else None
        if self._first is None:
            self._first = (line_no, field, kind)
        first_line, first_field, first_kind = self._first
        if (field is None) != (first_field is None):
            name = field or first_field
            has = "has no id, while" if field is None else "has an id, while"
            other = "has one" if field is None else "has none (so records are numbered by position)"
            raise DataError(self.file, f"{has} line {first_line} {other}", line_no, name)
        if field is not None and first_kind is not None and kind is not first_kind:  # int or str: the parser checked
            message = f"expected {_KINDS[first_kind]} id like line {first_line}'s, got {data[field]!r:.60}"
            raise DataError(self.file, message, line_no, field)
        self.records += 1
        self._field = field or "idx"

    def add_example(self, example: Example, line_no: int) -> None:
        idx = example.idx
        if idx in self._lines:
            message = f"duplicate idx {example.key} (first seen on line {self._lines[idx]})"
            raise DataError(self.file, message, line_no, self._field)
        self._lines[idx] = line_no
        if isinstance(idx, tuple):
            seen = self._record_lines.setdefault(idx[0], line_no)
            if seen != line_no:
                raise DataError(self.file, f"duplicate idx {idx[0]} (first seen on line {seen})", line_no, self._field)
        if example.group is not None and example.group != self._group:
            if example.group in self._groups:
                group = "/".join(map(str, example.group))
                raise DataError(self.file, f"duplicate question idx {group} in one passage", line_no, "idx")
            self._groups.add(example.group)
            self._group = example.group


_KINDS = {int: "an integer", str: "a string"}


def _walk(root: Node, depth: int = 1) -> Iterator[tuple[int, Node]]:
    for node in sorted(_listing(root), key=lambda n: n.name):
        if node.is_dir():
            yield depth, node
            if depth < SEARCH_DEPTH:
                yield from _walk(node, depth + 1)


def _listing(folder: Node) -> list[Node]:
    with reading(str(folder)):
        return list(folder.iterdir())


def decode_lines(raw: bytes, file: str) -> list[str]:
    """The lines of a UTF-8 file (a byte-order mark is allowed); a DataError if it is not UTF-8."""
    try:
        return raw.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(file, f"not UTF-8 text (byte {e.start})") from None


def parse_json_line(line: str, file: str, line_no: int) -> dict:
    """One JSON Lines record, which must be an object; a DataError naming the file and line if not."""
    data = parse_json(line, file, line_no)
    if not isinstance(data, dict):
        raise DataError(file, f"expected a JSON object, got {type(data).__name__}", line_no)
    check_unicode(data, file, line_no, line)
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


def open_directory_or_zip(spec: str, limits: ReadLimits = DEFAULT_LIMITS, tape_set: str = "episodes") -> DataSource:
    path = Path(spec).expanduser()
    if path.is_dir():
        return DataSource([path], str(path), limits, tape_set)
    if path.is_file():  # a regular file: a pipe or a device is never opened
        with reading(str(path)):
            path.open("rb").close()  # an unreadable file is named as such, not as "not a zip"
            if zipfile.is_zipfile(path):
                return DataSource([zipfile.Path(path)], str(path), limits, tape_set)
    if path.exists():
        raise RuevalError(f"--data {spec}: not a directory or a zip archive")
    raise RuevalError(f"--data {spec}: no such directory or zip file")


BUNDLED_SAMPLES = "bundled samples"  # their description, which a run records as its data


def bundled_samples() -> DataSource:
    return DataSource([SAMPLES_DIR], BUNDLED_SAMPLES)
