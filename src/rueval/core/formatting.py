"""Texts formatted from data, within bounds: the one home of format specs for templates that come from
data files (MERA's instructions, ``str.format``, ``%`` and Jinja's ``format`` filter in a task
file's templates). A width or precision above ``MAX_WIDTH`` is refused before anything is allocated,
and a text is refused once it would pass ``MAX_TEXT`` characters, so ``{premise:>1500000000}`` is an
error, not gigabytes. MERA's instructions name plain fields only: no ``{premise.upper}``, no
``{premise.__class__}``, no ``{choices[0]}``, no positional ``{}``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

MAX_TEXT = 2**24  # characters in one formatted or rendered text (the longest official record is ~100 KB)
MAX_WIDTH = 10_000  # a format spec's width or precision
NUMBER = re.compile(r"\d+")
# printf style: %[(key)][flags][width][.precision][length modifier]type
PRINTF = re.compile(r"%(?:\((?P<key>[^)]*)\))?(?P<spec>[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d*))?[hlL]?)(?P<type>.?)", re.S)


class FormatError(ValueError):
    """A template that cannot be formatted within bounds, or that names more than a field; ``field`` is
    the field at fault, where there is one."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def check_spec(spec: str, field: str | None = None) -> None:
    """A format spec (``>10``, ``.2f``, ``%-5s``) whose widths and precisions stay within MAX_WIDTH."""
    for number in NUMBER.findall(spec):
        if len(number) > 9 or int(number) > MAX_WIDTH:
            raise FormatError(f"format spec {spec[:40]!r}: width or precision above {MAX_WIDTH}", field)


class Length:
    """The length of a text being built, refused once it passes MAX_TEXT."""

    def __init__(self, start: int = 0):
        self.total = start
        self.add(0)

    def add(self, size: int) -> None:
        self.total += size
        if self.total > MAX_TEXT:
            raise FormatError(f"the text would pass {MAX_TEXT} characters")


class BoundedFormatter(string.Formatter):
    """``str.format`` with bounded format specs and a bounded result."""

    _field: str | None = None  # the field being filled, for errors

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._length = Length(len(format_string))
        return super().vformat(format_string, args, kwargs)

    def format_field(self, value: Any, format_spec: str) -> str:
        check_spec(format_spec, self._field)
        text = super().format_field(value, format_spec)
        try:
            self._length.add(len(text))
        except FormatError as e:
            raise FormatError(str(e), self._field) from None
        return text


class FieldFormatter(BoundedFormatter):
    """``template.format(**fields)`` for a template from data: plain field names only."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, str]:
        if not field_name.isidentifier():
            what = "a positional field" if not field_name or field_name.isdigit() else "more than a field name"
            raise FormatError(f"{{{field_name[:40]}}} is {what}: only plain {{name}} fields are filled", field_name)
        if field_name not in kwargs:
            raise FormatError(f"{{{field_name}}} is not among the fields", field_name)
        self._field = field_name
        return kwargs[field_name], field_name

    def format_field(self, value: Any, format_spec: str) -> str:
        try:
            return super().format_field(value, format_spec)
        except FormatError:
            raise
        except (ValueError, TypeError) as e:
            raise FormatError(f"format spec {format_spec[:40]!r}: {e}", self._field) from None


def fill(template: str, fields: Mapping[str, Any]) -> str:
    """``template`` with its ``{name}`` fields filled from ``fields``; a FormatError (naming the field,
    where one is at fault) if it names anything else, asks for too wide a spec or too long a text."""
    try:
        for _, name, spec, _ in string.Formatter().parse(template):
            if spec and "{" in spec:
                raise FormatError(f"format spec {spec[:40]!r}: a field inside a spec is not filled", name)
        return FieldFormatter().vformat(template, (), fields)
    except FormatError:
        raise
    except (ValueError, IndexError) as e:  # an unmatched brace, a spec nested too deep
        raise FormatError(f"not a format template ({e})") from None


def printf(template: str, values: Any) -> str:
    """``template % values`` (Jinja's ``format`` filter, the ``%`` operator on a text) within bounds:
    each conversion is formatted on its own, its spec checked first; ``*`` widths are refused."""
    items = values if isinstance(values, tuple) else (values,)
    pieces: list[str] = []
    length, used, end = Length(), 0, 0
    for match in PRINTF.finditer(template):
        key, spec, kind = match["key"], match["spec"], match["type"]
        pieces.append(template[end : match.start()])
        end = match.end()
        if kind == "%" and key is None and not spec:
            pieces.append("%")
            continue
        if "*" in spec:
            raise FormatError(f"format {match[0][:40]!r}: a '*' width is not allowed")
        check_spec(spec)
        if key is not None:
            if not isinstance(values, Mapping):
                raise TypeError("format requires a mapping")
            value = values[key]
        elif used < len(items):
            value, used = items[used], used + 1
        else:
            raise TypeError("not enough arguments for format string")
        pieces.append(f"%{spec}{kind}" % (value,))
        length.add(len(pieces[-1]) + len(pieces[-2]))
    if used < len(items) and not isinstance(values, Mapping):
        raise TypeError("not all arguments converted during string formatting")
    pieces.append(template[end:])
    return "".join(pieces)
