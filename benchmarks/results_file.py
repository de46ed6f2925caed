"""The benchmarks' results file: the machine and settings they ran with, then their rows."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def write_results(path: Path, rows: list[dict[str, Any]], **settings: Any) -> None:
    """``{"environment": {created, python, platform, cpus, **settings}, "results": rows}`` as JSON."""
    environment = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        **settings,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"environment": environment, "results": rows}, indent=2) + "\n", encoding="utf-8")
    print(f"written {path}")
