"""Where tasks' data comes from: bundled samples (default), a directory or zip, or the HF hub."""

from __future__ import annotations

from rueval.data.local import MAX_LINE_BYTES, DataSource, Split, bundled_samples, open_directory_or_zip
from rueval.data.records import Dataset, Example, Record
from rueval.data.splits import TaskData, eval_split, load_task_data, load_train


def open_data(spec: str | None, max_line_bytes: int = MAX_LINE_BYTES) -> DataSource:
    """`None` -> the bundled samples; "hf" -> the hub; otherwise a directory or zip archive.
    A data line longer than ``max_line_bytes`` is refused before it is parsed."""
    if spec is None:
        return bundled_samples()
    if spec == "hf":
        from rueval.data.hub import HubSource  # huggingface_hub is imported only when asked for

        return HubSource(max_line_bytes)
    return open_directory_or_zip(spec, max_line_bytes)


__all__ = [
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
