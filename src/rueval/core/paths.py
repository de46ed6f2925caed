"""Where rueval keeps things between runs."""

from __future__ import annotations

import os
from pathlib import Path

from rueval.core.errors import RuevalError


def cache_dir(kind: str) -> Path:
    """A cache folder: $RUEVAL_CACHE_DIR/<kind>, else ~/.cache/rueval/<kind> (XDG_CACHE_HOME honoured)."""
    root = (
        os.environ.get("RUEVAL_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rueval"
    )
    path = Path(root) / kind
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a file in the way, no permission, a read-only disk
        where = "RUEVAL_CACHE_DIR" if os.environ.get("RUEVAL_CACHE_DIR") else "the cache folder"
        message = f"cannot be made ({e.strerror or e}); set {where} to a folder rueval can write"
        raise RuevalError(f"{path}: {message}") from None
    return path
