"""Files written atomically: a reader never sees half a file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rueval.errors import RuevalError


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


def _cannot_write(path: Path, error: OSError) -> RuevalError:
    return RuevalError(f"{path}: cannot be written ({error.strerror or error})")


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    """One JSON line per row, written as the rows come (a large file is never held whole)."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
