"""Reading data files within bounds: a file or zip member is streamed line by line (a member is
inflated as it is read, never whole), hashed as it goes, and refused as soon as it passes a limit,
so hostile input (a zip bomb, a file with no line breaks, gigabytes of blank lines) costs neither
memory nor hours. Only regular files are opened: a folder, a named pipe or a device where a split
file is expected is an error, found before anything opens it (so a pipe never blocks the run).
"""

from __future__ import annotations

import hashlib
import json
import json.decoder
import json.scanner
import os
import re
import stat
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any, Self

from rueval.core.errors import DataError, RuevalError

Node = Path | zipfile.Path
ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # JSON's only way to write a surrogate
MAX_LINE_BYTES = 20 * 2**20  # the longest JSON line read (official MuSeRC lines, the longest, are tens of KB)


@dataclass(frozen=True)
class ReadLimits:
    """How much of one data file (or zip member) is read before it is refused. The defaults leave
    room for every official file (the largest, RuCoS train, is about 72k lines and a few hundred MB);
    each limit has a command-line option, named in its error."""

    line_bytes: int = MAX_LINE_BYTES  # --max-line-mb
    file_bytes: int = 2**30  # --max-file-mb: the file's size, decompressed
    lines: int = 1_000_000  # --max-lines
    blank_lines: int = 100_000  # --max-blank-lines
    hints: bool = True  # errors name the command-line option that raises the limit (a service's uploads have none)

    def __post_init__(self) -> None:
        for limit in fields(self):
            value = getattr(self, limit.name)
            if limit.name != "hints" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise RuevalError(f"read limit {limit.name}: expected a positive whole number, got {value!r}")

    def raise_hint(self, option: str) -> str:
        """`` (raise --OPTION)`` for an error, where the limits come from the command line."""
        return f" (raise {option})" if self.hints else ""


DEFAULT_LIMITS = ReadLimits()


@contextmanager
def reading(file: str) -> Iterator[None]:
    """Failures to read a file or folder as a DataError naming it."""
    try:
        yield
    except PermissionError:
        raise DataError(file, "permission denied") from None
    except FileNotFoundError:
        if os.path.islink(file):
            raise DataError(file, f"broken symbolic link (to {os.readlink(file)})") from None
        raise DataError(file, "no such file (removed while reading?)") from None
    except (zipfile.BadZipFile, zlib.error, EOFError) as e:
        raise DataError(file, f"corrupt zip data ({str(e) or type(e).__name__})") from None
    except NotImplementedError as e:  # zipfile: a compression method it has no decoder for
        raise DataError(file, f"cannot be unzipped ({e}): zip it again with deflate") from None
    except OSError as e:
        raise DataError(file, f"cannot read: {e.strerror or e}") from None


FOLDER = "a folder where a file is expected"


def _not_regular(mode: int) -> str | None:
    """What a file that is not a regular file is, for the error; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return FOLDER
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO), not a regular file: not read"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file: not read"
    return "not a regular file: not read"


def _check_size(file: str, size: int, limits: ReadLimits) -> None:
    if size > limits.file_bytes:
        hint = limits.raise_hint("--max-file-mb")
        raise DataError(file, f"larger than {_megabytes(limits.file_bytes)} MB: not read{hint}")


def _megabytes(size: int) -> str:
    return f"{size / 2**20:g}"


def open_data_file(node: Node, limits: ReadLimits = DEFAULT_LIMITS) -> IO[bytes]:
    """A data file opened for reading, once it is known to be a regular file within the size limit:
    a folder, a pipe or a device is refused before anything opens it."""
    file = str(node)
    with reading(file):
        if isinstance(node, zipfile.Path):
            if node.is_dir():
                raise DataError(file, FOLDER)
            if node.root.getinfo(node.at).flag_bits & 0x1:
                raise DataError(file, "encrypted in the zip: not read (unpack it, or zip it without a password)")
            _check_size(file, node.root.getinfo(node.at).file_size, limits)  # inflating stops at this size
            return node.open("rb")
        status = node.stat()
        if problem := _not_regular(status.st_mode):
            raise DataError(file, problem)
        _check_size(file, status.st_size, limits)
        return node.open("rb")


def read_whole(node: Node, limits: ReadLimits = DEFAULT_LIMITS) -> bytes:
    """A whole data file (a JSON document), at most the size limit."""
    with open_data_file(node, limits) as stream, reading(str(node)):
        raw = stream.read(limits.file_bytes + 1)
    _check_size(str(node), len(raw), limits)
    return raw


class JsonLines:
    """A split file read as a stream: iterating gives (line number, bytes) of every line that is not
    blank, without its line break, each at most ``limits.line_bytes`` long (``decode_line`` reads
    one as text); ``sha256`` is the whole file's hash (the rest is read for it). The file's lines,
    blank lines and bytes are counted against ``limits``."""

    def __init__(self, node: Node, limits: ReadLimits = DEFAULT_LIMITS):
        self.node, self.file, self.limits = node, str(node), limits
        self._digest = hashlib.sha256()
        self._stream: IO[bytes] | None = None
        self._bytes = 0

    def __enter__(self) -> Self:
        self._stream = open_data_file(self.node, self.limits)
        return self

    def __exit__(self, *exc: object) -> None:
        self._opened.close()

    @property
    def _opened(self) -> IO[bytes]:
        if self._stream is None:
            raise RuntimeError("JsonLines reads inside its with block")
        return self._stream

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        limits, line_no, blank, stream = self.limits, 0, 0, self._opened
        while True:
            raw = self._read(lambda: stream.readline(limits.line_bytes + 1))
            if not raw:
                return
            line_no += 1
            if line_no > limits.lines:
                hint = limits.raise_hint("--max-lines")
                raise DataError(self.file, f"more than {limits.lines} lines: not read{hint}", line_no)
            raw = raw.rstrip(b"\r\n")
            if len(raw) > limits.line_bytes:
                raise DataError(self.file, f"line longer than {limits.line_bytes} bytes: not read", line_no)
            if not raw.strip():
                blank += 1
                if blank > limits.blank_lines:
                    hint = limits.raise_hint("--max-blank-lines")
                    message = f"more than {limits.blank_lines} blank lines: not read{hint}"
                    raise DataError(self.file, message, line_no)
                continue
            yield line_no, raw

    def sha256(self) -> str:
        stream = self._opened
        while self._read(lambda: stream.read(1 << 20)):
            pass
        return self._digest.hexdigest()

    def _read(self, read: Callable[[], bytes]) -> bytes:
        """One read of the stream, hashed and counted against the size limit."""
        with reading(self.file):
            raw = read()
        self._bytes += len(raw)
        _check_size(self.file, self._bytes, self.limits)
        self._digest.update(raw)
        return raw


def parse_json(text: str | bytes, file: str, line: int | None = None) -> Any:
    """A JSON text (a line of a JSON Lines file at ``line``, or a whole document) as Python values. A
    DataError naming the file and line if it is malformed, or if one object gives a key twice (JSON
    readers disagree on which value wins: never taken silently)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise DataError(file, f"malformed JSON ({e.msg}, column {e.colno})", line or e.lineno) from None
    except _DuplicateKey as e:
        where = line or _line_of_duplicate(text if isinstance(text, str) else text.decode("utf-8-sig"))
        raise DataError(file, "given twice in one object", where, e.key) from None


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key, self.line = key, 0


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs):
        raise _DuplicateKey(next(key for key, n in Counter(key for key, _ in pairs).items() if n > 1))
    return found


def _line_of_duplicate(text: str) -> int | None:
    """The line of a document where the object giving a key twice begins, found by reading it again
    with the json module's pure-Python scanner, the one that passes positions on (slow: only on this
    error; undocumented, so the line is left out should it ever change)."""
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> Any:
        try:
            return json.decoder.JSONObject(s_and_end, *args)  # type: ignore[attr-defined]
        except _DuplicateKey as e:
            e.line = e.line or s_and_end[0].count("\n", 0, s_and_end[1]) + 1
            raise

    try:
        decoder.parse_object = parse_object  # type: ignore[attr-defined]
        decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
        decoder.decode(text)
    except _DuplicateKey as e:
        return e.line
    except (AttributeError, TypeError, RecursionError):
        pass
    return None


def decode_line(raw: bytes, file: str, line_no: int) -> str:
    """One line of UTF-8 text (a byte-order mark may start the first); a DataError if it is not UTF-8."""
    try:
        return raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
    except UnicodeDecodeError as e:
        raise DataError(file, f"not UTF-8 text (byte {e.start} of the line)", line_no) from None


def surrogate_field(value: Any, path: str = "") -> str | None:
    """The field (``passage.questions[1].text``) of the first text or key in ``value`` holding a lone
    surrogate (valid JSON, ``"\\ud800"``, but not Unicode text, so no model or file can take it); None if none."""
    if isinstance(value, str):
        return None if value.isascii() or not _has_surrogate(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            field = f"{path}.{key}" if path else str(key)
            if _has_surrogate(str(key)):
                return field
            if (found := surrogate_field(item, field)) is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            if (found := surrogate_field(item, f"{path}[{index}]")) is not None:
                return found
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_unicode(data: Any, file: str, line: int | None, text: str | None = None) -> None:
    """A DataError naming the field if a parsed JSON value holds a lone surrogate; ``text``, the JSON it
    was parsed from, if given, spares the search where it writes no surrogate at all."""
    if text is not None and not ESCAPED_SURROGATE.search(text):
        return
    field = surrogate_field(data)
    if field is not None:
        raise DataError(file, NOT_UNICODE, line, field or None)


NOT_UNICODE = "a lone surrogate (\\ud800-\\udfff) in a text: not Unicode text"
