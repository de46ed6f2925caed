"""Where tasks' data comes from: bundled samples (default), a directory or zip, or the HF hub."""

from __future__ import annotations

from pathlib import Path

from rueval.data.local import (
    MAX_LINE_BYTES,
    TAPE_SETS,
    DataSource,
    Split,
    bundled_samples,
    open_directory_or_zip,
    tape_set_of,
)
from rueval.data.mera import MeraSource, is_mera_folder
from rueval.data.records import Dataset, Example, Record
from rueval.data.splits import TaskData, eval_split, load_task_data, load_train


def open_data(spec: str | None, max_line_bytes: int = MAX_LINE_BYTES, tape_set: str = "episodes") -> DataSource:
    """`None` -> the bundled samples; "hf" -> the hub; a folder of MERA's task files; otherwise a
    directory or zip archive in the official layout. A data line longer than ``max_line_bytes`` is
    refused before it is parsed; where TAPE's data has both sets, ``tape_set`` is scored ("episodes",
    TAPE's own test sets, or "raw")."""
    if spec is None:
        return bundled_samples()
    if spec == "hf":
        from rueval.data.hub import HubSource  # huggingface_hub is imported only when asked for

        return HubSource(max_line_bytes, tape_set)
    if is_mera_folder(Path(spec).expanduser()):
        return MeraSource(Path(spec).expanduser())
    return open_directory_or_zip(spec, max_line_bytes, tape_set)


__all__ = [
    "TAPE_SETS",
    "tape_set_of",
    "MAX_LINE_BYTES",
    "DataSource",
    "Dataset",
    "Example",
    "Record",
    "Split",
    "TaskData",
    "eval_split",
    "load_task_data",
    "load_train",
    "open_data",
]
