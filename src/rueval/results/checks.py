"""Reading result files back: JSON with the file, line and field of anything malformed."""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from rueval.core.errors import DataError, RuevalError
from rueval.data.reading import read_whole

T = TypeVar("T")


def read_json_file(path: Path) -> Any:
    """A JSON file's content; a DataError naming the file (and line) if it is missing, not a regular
    file (a pipe would block), larger than data files may be, not UTF-8 or not JSON."""
    try:
        return json.loads(read_whole(path).decode("utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(str(path), f"not valid JSON: {e.msg}", line=e.lineno) from None
    except UnicodeDecodeError:
        raise DataError(str(path), "not UTF-8 text") from None


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

    @overload
    def number(self, value: Any, field: str, optional: Literal[False] = False) -> float: ...

    @overload
    def number(self, value: Any, field: str, optional: bool) -> float | None: ...

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

    def typed(self, kind: Any, value: Any, field: str) -> Any:
        """``value`` as a field annotated ``kind`` takes it: bool, int, float, str, dict, list, tuple[X, ...]
        (a JSON list), or a union of them with None."""
        if typing.get_origin(kind) in (typing.Union, types.UnionType):
            if value is None and type(None) in typing.get_args(kind):
                return None
            for option in (arg for arg in typing.get_args(kind) if arg is not type(None)):
                try:
                    return self.typed(option, value, field)
                except DataError:
                    continue
            raise self.fail(field, f"expected {_describe(kind)}, got {value!r:.40}")
        if typing.get_origin(kind) is tuple:
            if not isinstance(value, list | tuple):
                raise self.fail(field, f"expected a list, got {value!r:.40}")
            item = typing.get_args(kind)[0]
            return tuple(self.typed(item, v, f"{field}[{i}]") for i, v in enumerate(value))
        if kind is dict or typing.get_origin(kind) is dict:
            return dict(self.obj(value, field))
        if kind is list and not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {value!r:.40}")
        if kind in (int, float):
            number = self.number(value, field)
            if kind is int and not isinstance(number, int):
                raise self.fail(field, f"expected a whole number, got {value!r:.40}")
            return number
        if kind is bool and not isinstance(value, bool):
            raise self.fail(field, f"expected true or false, got {value!r:.40}")
        return self.text(value, field) if kind is str else value

    def fields(self, cls: type[T], data: Any, at: str, made: Mapping[str, Any] | None = None) -> T:
        """A dataclass of JSON values: an unknown key, a value of the wrong type or one the class refuses is an
        error naming the field; a key left out keeps its default. ``at``: the fields' prefix, e.g. "options.".
        ``made``: fields whose values were read already (by their own classes), passed on as they are."""
        data, made = self.obj(data, at.rstrip(".")), made or {}
        hints = typing.get_type_hints(cls)
        known = [f.name for f in dataclasses.fields(cls) if f.name not in made]  # type: ignore[arg-type]
        for key in data:
            if key not in known:
                raise self.fail(f"{at}{key}", f"unknown field; expected one of: {', '.join(known)}")
        values = {key: self.typed(hints[key], value, f"{at}{key}") for key, value in data.items()}
        with self.refusals(at.rstrip(".")):
            return cls(**values, **made)

    @contextmanager
    def refusals(self, field: str) -> Iterator[None]:
        """A value's own check (a RuevalError) reported as this file's field."""
        try:
            yield
        except DataError:
            raise
        except RuevalError as e:
            raise self.fail(field, str(e)) from None


def _describe(kind: Any) -> str:
    names = [getattr(arg, "__name__", str(arg)) for arg in typing.get_args(kind)]
    return " or ".join("null" if name == "NoneType" else name for name in names)
