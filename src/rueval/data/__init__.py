"""Where tasks' data comes from: bundled samples (default), a directory or zip, or the HF hub."""

from __future__ import annotations

from pathlib import Path

from rueval.core.errors import RuevalError
from rueval.data.ids import check_written_ids, in_split_order, submission_ids
from rueval.data.local import (
    BUNDLED_SAMPLES,
    TAPE_SETS,
    DataSource,
    Split,
    bundled_samples,
    open_directory_or_zip,
    tape_set_of,
)
from rueval.data.mera import MeraSource, is_mera_folder
from rueval.data.reading import DEFAULT_LIMITS, MAX_LINE_BYTES, ReadLimits
from rueval.data.records import OWN_LAYOUT, Dataset, Example, IdRule, Layout, Record
from rueval.data.splits import TaskData, eval_split, load_task_data, load_train


def check_data_spec(spec: object) -> None:
    """--data as a user gives it: a path (a folder or a zip) or "hf"; never empty (it would read the current folder)."""
    if not isinstance(spec, str | Path) or not str(spec).strip():
        raise RuevalError(f"--data {spec!r:.40}: expected a folder, a zip file, or hf")


def open_data(spec: str | None, limits: ReadLimits = DEFAULT_LIMITS, tape_set: str = "episodes") -> DataSource:
    """`None` -> the bundled samples; "hf" -> the hub; a folder of MERA's task files; otherwise a
    directory or zip archive in the official layout. Every data file is read within ``limits``
    (a line, a file's size, its lines and blank lines; a longer line is refused before it is
    parsed); where TAPE's data has both sets, ``tape_set`` is scored ("episodes", TAPE's own test
    sets, or "raw")."""
    if spec is None:
        return bundled_samples()
    check_data_spec(spec)
    if spec == "hf":
        from rueval.data.hub import HubSource  # huggingface_hub is imported only when asked for

        return HubSource(limits, tape_set)
    if is_mera_folder(Path(spec).expanduser()):
        return MeraSource(Path(spec).expanduser(), limits)
    return open_directory_or_zip(spec, limits, tape_set)


__all__ = [
    "BUNDLED_SAMPLES",
    "check_data_spec",
    "TAPE_SETS",
    "tape_set_of",
    "DEFAULT_LIMITS",
    "MAX_LINE_BYTES",
    "DataSource",
    "Dataset",
    "Example",
    "IdRule",
    "Layout",
    "OWN_LAYOUT",
    "ReadLimits",
    "Record",
    "Split",
    "TaskData",
    "check_written_ids",
    "in_split_order",
    "eval_split",
    "is_mera_folder",
    "load_task_data",
    "load_train",
    "open_data",
    "submission_ids",
]
