"""User-facing errors. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations


class RuevalError(Exception):
    """A problem with the user's input: bad data, an unknown name, a missing file."""


class WriteError(RuevalError):
    """A file that cannot be written; ``errno`` says why (ENOSPC: a full disk; EROFS: read-only)."""

    def __init__(self, message: str, errno: int | None):
        super().__init__(message)
        self.errno = errno


class DataError(RuevalError):
    """Bad data, located at a file, and where known a line and a field."""

    def __init__(self, file: str, message: str, line: int | None = None, field: str | None = None):
        self.file, self.line, self.field, self.message = file, line, field, message
        where = file if line is None else f"{file}:{line}"
        if field is not None:
            where += f": field '{field}'"
        super().__init__(f"{where}: {message}")


def shown(value: object, width: int = 60) -> str:
    """``value`` as an error message shows it: its repr cut to ``width`` characters, built without rendering
    the whole of a large or deeply nested value (reprlib)."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, width, width
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 8
    text = short.repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
