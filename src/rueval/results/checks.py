"""Reading result files back: JSON with the file, line and field of anything malformed."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rueval.errors import DataError


def read_json_file(path: Path) -> Any:
    """A JSON file's content; a DataError naming the file (and line) if it is missing, not UTF-8 or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(str(path), f"not valid JSON: {e.msg}", line=e.lineno) from None
    except UnicodeDecodeError:
        raise DataError(str(path), "not UTF-8 text") from None
    except OSError as e:
        raise DataError(str(path), f"cannot be read ({e.strerror or e})") from None


class Checker:
    """Reads values out of parsed JSON, naming the file and field of anything malformed."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, field: str, message: str) -> DataError:
        return DataError(self.file, message, field=field or None)

    def obj(self, value: Any, field: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(field, f"expected an object, got {type(value).__name__}")
        return value

    def number(self, value: Any, field: str, optional: bool = False) -> float | None:
        if optional and value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(field, f"expected a number, got {value!r:.40}")
        return value

    def numbers(self, value: Any, field: str) -> dict[str, float]:
        return {key: self.number(item, f"{field}.{key}") for key, item in self.obj(value, field).items()}

    def text(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise self.fail(field, f"expected a string, got {value!r:.40}")
        return value

    def required(self, data: Mapping[str, Any], key: str, at: str) -> Any:
        if key not in data:
            raise self.fail(f"{at}{key}", "missing")
        return data[key]
