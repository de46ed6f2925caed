"""Files written atomically: a reader never sees half a file."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError, WriteError


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` that replaces it only if the block finishes. A file that
    cannot be written (no permission, a file where a folder should be, a full disk) is a user
    error naming it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise _cannot_write(path, e) from None
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes owner-only files; results are for sharing
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise _cannot_write(path, e) from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def _cannot_write(path: Path, error: OSError) -> WriteError:
    return WriteError(f"{path}: cannot be written ({error.strerror or error})", error.errno)


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: Path, data: Any) -> None:
    write_text(path, _json(path, data, indent=2) + "\n")


def write_json_files(documents: Mapping[Path, Any]) -> None:
    """Several JSON files replaced together: each is written whole beside its place, then all are moved
    into place, so a failed write (a full disk) leaves every one of them as it was."""
    with ExitStack() as stack:
        temporaries = {path: stack.enter_context(atomic_path(path)) for path in documents}
        for path, tmp in temporaries.items():
            tmp.write_text(_json(path, documents[path], indent=2) + "\n", encoding="utf-8")


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    """One JSON line per row, written as the rows come (a large file is never held whole)."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as f:
        for line, row in enumerate(rows, 1):
            f.write(_json(f"{path}:{line}", row) + "\n")


def _json(where: Path | str, data: Any, indent: int | None = None) -> str:
    """``data`` as JSON; a RuevalError naming the file (and line) and the field where a number is NaN
    or infinite (JSON has no such numbers, and a score that is one is no score): nothing is written."""
    try:
        return json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:
        field, value = _non_finite(data)
        raise RuevalError(f"{where}: field '{field}' is {value}, not a number; not written") from None


def _non_finite(data: Any, at: str = "") -> tuple[str, float]:
    """The first NaN or infinite number in ``data`` and its dotted path."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list | tuple) else ()
    for key, value in items:
        where = f"{at}.{key}" if at and isinstance(key, str) else f"{at}[{key}]" if at else str(key)
        if isinstance(value, float) and not math.isfinite(value):
            return where, value
        found = _non_finite(value, where)
        if found[0]:
            return found
    return "", math.nan
