"""A submission zip checked against the gold before it is queued: the archive (its size, member
count and names, declared sizes, so no zip bomb and no path), then every line of every task file,
parsed as rueval reads JSON Lines, with its ids matched to the gold's test ids and its labels to
the task's label space. The first problem is a RuevalError naming ``<file>:<line>: field '<f>'``;
no message shows a gold answer (only ids and the label space, which the public test data has).

The zip is the one `rueval submit` writes (rueval.submit): ``<Task>.jsonl`` per task, one
``{"idx", "label"}`` line per test item (RuCoS: per query), MuSeRC's answers nested under their
question and passage; labels as the official sample submission writes them (RUSSE and DaNetQA
"true"/"false", RWSD "True"/"False"; JSON booleans are read too).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.data.local import parse_json_line
from rueval.data.reading import JsonLines, ReadLimits, decode_line
from rueval.data.records import Record
from rueval.serve.gold import Gold, GoldTask
from rueval.tasks import RSG, Task

MB = 2**20
RSG_FOLDERS = {name: task for task in RSG.tasks for name in task.names}


@dataclass(frozen=True)
class UploadLimits:
    """What an upload may be: the zip's own size, its members, and what they inflate to; each member
    is read as data files are (rueval.data.reading), within ``read``."""

    upload_bytes: int = 20 * MB
    members: int = 32
    inflated_bytes: int = 200 * MB  # all members together, as the zip declares them
    read: ReadLimits = ReadLimits(line_bytes=1 * MB, file_bytes=200 * MB, hints=False)


DEFAULT_LIMITS = UploadLimits()


@dataclass(frozen=True)
class CheckedSubmission:
    """A zip's predictions per gold task, each in the order of the gold's test items; the RSG tasks it
    holds that the gold has no answers for; and whether it leaves out some of the gold's tasks."""

    predictions: dict[str, list[Any]]
    ignored: tuple[str, ...]
    partial: bool


def check_submission(data: bytes, gold: Gold, limits: UploadLimits = DEFAULT_LIMITS) -> CheckedSubmission:
    if len(data) > limits.upload_bytes:
        raise RuevalError(f"upload: {len(data):,} bytes, over the limit of {limits.upload_bytes:,}")
    if not data:
        raise RuevalError("upload: empty file; expected the zip `rueval submit` writes")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, EOFError):
        raise RuevalError("upload: not a zip archive; expected the zip `rueval submit` writes") from None
    archive.filename = ""  # its members are named as the uploader named them: "PARus.jsonl:3: ..."
    with archive:
        members, ignored = _members(archive, gold, limits)
        predictions = {}
        for name, info in members.items():
            predictions[name] = _read_task(archive, info, gold.tasks[name], limits)
    ordered = {name: predictions[name] for name in gold.tasks if name in predictions}
    return CheckedSubmission(ordered, ignored, partial=len(ordered) < len(gold.tasks))


def _members(
    archive: zipfile.ZipFile, gold: Gold, limits: UploadLimits
) -> tuple[dict[str, zipfile.ZipInfo], tuple[str, ...]]:
    """The gold tasks' files in the zip, and the RSG tasks it holds without gold; every member name
    checked (a task file at the top of the zip, nothing else), every declared size counted."""
    infos = [info for info in archive.infolist() if not info.is_dir()]
    if not infos:
        raise RuevalError("upload: the zip is empty; expected one <Task>.jsonl per task, as `rueval submit` writes")
    if len(infos) > limits.members:
        raise RuevalError(f"upload: {len(infos)} files in the zip, over the limit of {limits.members}")
    inflated = sum(info.file_size for info in infos)
    if inflated > limits.inflated_bytes:
        raise RuevalError(
            f"upload: the zip inflates to {inflated:,} bytes, over the limit of {limits.inflated_bytes:,}"
        )
    members: dict[str, zipfile.ZipInfo] = {}
    ignored = []
    for info in infos:
        task = _task_of(info.filename)
        if task.name in members or task.name in ignored:
            raise RuevalError(f"upload: {info.filename}: a second file for {task.name}")
        if info.flag_bits & 0x1:
            raise RuevalError(f"upload: {info.filename}: encrypted; upload the zip without a password")
        if task.name in gold.tasks:
            members[task.name] = info
        else:
            ignored.append(task.name)
    if not members:
        expected = ", ".join(f"{gold_task.task.folder}.jsonl" for gold_task in gold.tasks.values())
        raise RuevalError(f"upload: no file for a task this board scores; expected any of: {expected}")
    return members, tuple(ignored)


def _task_of(filename: str) -> Task:
    shown = json.dumps(filename, ensure_ascii=False)[1:-1][:120]
    if "/" in filename or "\\" in filename or filename.startswith(".") or ":" in filename:
        raise RuevalError(f"upload: member {shown}: a path; expected <Task>.jsonl files at the top of the zip")
    stem, dot, suffix = filename.rpartition(".")
    task = RSG_FOLDERS.get(stem.lower()) if dot and suffix.lower() == "jsonl" else None
    if task is None:
        names = ", ".join(f"{t.folder}.jsonl" for t in RSG.tasks)
        raise RuevalError(f"upload: member {shown}: not an RSG task file; expected any of: {names}")
    return task


def _lines(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: UploadLimits) -> Iterator[tuple[int, str]]:
    """A member's lines that are not blank (number, text), read as a stream within ``limits.read``."""
    with JsonLines(zipfile.Path(archive, info.filename), limits.read) as lines:
        for number, raw in lines:
            yield number, decode_line(raw, info.filename, number)


def _read_task(archive: zipfile.ZipFile, info: zipfile.ZipInfo, gold: GoldTask, limits: UploadLimits) -> list[Any]:
    """One task file's predictions, in the order of the gold's test items."""
    forms = label_forms(gold.task)
    predictions: list[Any] = [None] * len(gold.examples)
    seen: dict[Any, int] = {}
    for number, line in _lines(archive, info, limits):
        data = parse_json_line(line, info.filename, number)
        # a submission's ids are the test set's: its layout's rule
        record = Record(data, info.filename, number, len(seen), ids=gold.task.layout.ids)
        pairs = _muserc_answers(record) if gold.nested else [(record, (record.id(),))]
        for answer, path in pairs:
            key = path if gold.nested else path[0]
            if key not in gold.ids:
                raise answer.error("idx", f"{_shown(key)} is not an id of the {gold.task.folder} test set")
            if key in seen:
                raise answer.error("idx", f"{_shown(key)} again (first on line {seen[key]})")
            seen[key] = number
            predictions[gold.ids[key]] = _label(answer, gold.task, forms)
    if len(seen) < len(gold.ids):
        missing = [key for key in gold.ids if key not in seen]
        shown = ", ".join(_shown(key) for key in missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise DataError(info.filename, f"no prediction for {len(missing)} of {len(gold.ids)} test items: idx {shown}")
    return predictions


def _muserc_answers(record: Record) -> list[tuple[Record, tuple[int, int, int]]]:
    """A MuSeRC line's answers, each with its (passage, question, answer) path."""
    answers = []
    for question in record.items("passage.questions"):
        for answer in question.items("answers"):
            answers.append((answer, (record.id(), question.id(), answer.id())))
    return answers


def label_forms(task: Task) -> dict[tuple[type, Any], Any]:
    """How a label may be written in a submission -> the label: as the official sample writes it, or
    as its JSON value where that differs (true for RUSSE's "true"). Types are kept apart (1 is not true)."""
    to_label = task.submission_label or (lambda label: label)
    return {(type(form), form): label for label in task.labels for form in (label, to_label(label))}


def _label(record: Record, task: Task, forms: dict[tuple[type, Any], Any]) -> Any:
    value = record.get("label")
    if task.kind == "span":  # RuCoS: the entity's text
        if not isinstance(value, str):
            raise record.error("label", f"expected the answer's text, got {_shown(value)}")
        return value
    if isinstance(value, dict | list) or (type(value), value) not in forms:
        expected = ", ".join(dict.fromkeys(json.dumps(form, ensure_ascii=False) for _, form in forms))
        raise record.error("label", f"{_shown(value)} is not a label of {task.folder}; expected one of: {expected}")
    return forms[type(value), value]


def _shown(value: Any) -> str:
    """A value from the upload as JSON, cut short."""
    if isinstance(value, tuple):
        return "/".join(map(str, value))
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
