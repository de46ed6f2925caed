"""Where rueval keeps things between runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """A cache folder: $RUEVAL_CACHE_DIR/<kind>, else ~/.cache/rueval/<kind> (XDG_CACHE_HOME honoured)."""
    root = (
        os.environ.get("RUEVAL_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rueval"
    )
    path = Path(root) / kind
    path.mkdir(parents=True, exist_ok=True)
    return path
