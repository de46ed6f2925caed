"""Helpers the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# a small template in the usual shape: a marker per turn, a newline after each, the assistant's marker to answer
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SYSTEM = "Ты помощник."


def require(available: bool, reason: str) -> None:
    """For a test that needs a real component (a browser, a server, an optional extra): skipped with
    ``reason`` where it is missing, failed under CI=true, where .ci/run installs every component."""
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: nothing may be skipped)")
    pytest.skip(reason, allow_module_level=True)


def require_modules(*names: str, extra: str) -> None:
    """``require`` for Python packages of an optional extra."""
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    require(not missing, f"needs {', '.join(missing)}: pip install -e '.[{extra}]'")
