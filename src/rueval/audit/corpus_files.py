"""A training corpus read for the n-gram overlap search (rueval.audit.ngram_overlap): plain text, JSON Lines
and Parquet files, one file or every such file under a folder (``.gz`` text and JSON Lines too), streamed
in pieces of about CHUNK_BYTES so memory never depends on the corpus's size.

- a text file (``.txt``) is one document;
- each line of a JSON Lines file (``.jsonl``, ``.ndjson``) is a JSON object whose text fields (``"text"`` by
  default) are each a document; null is no text;
- each row of a Parquet file (``.parquet``) likewise, its text columns read by row group in batches.

A piece is UTF-8 bytes holding one or more documents, each followed by SEPARATOR (a byte that is never in
UTF-8 text, so no n-gram runs across two documents), and says whether its last document goes on in the next
piece. Bad input is one DataError naming the file, the line and the field.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.data.reading import parse_json, reading

CHUNK_BYTES = 16 * 2**20  # read at once; a Parquet batch holds about this much text
MAX_LINE_BYTES = 256 * 2**20  # the longest JSON line read (a book-length document is a few MB)
SEPARATOR = b"\n\xff\n"  # after each document: 0xff is no UTF-8 byte, so it is a token no text has
ASCII_SPACES = b" \t\n\r\x0b\x0c"
Stream = gzip.GzipFile | BufferedReader
KINDS = {".txt": "text", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Piece:
    """Documents' UTF-8 text, each ended by SEPARATOR unless ``goes_on`` (its last document continues in
    the next piece); ``read``: bytes of the file read for it (for progress)."""

    text: bytes
    goes_on: bool
    read: int
    documents: int


def corpus_files(path: str | Path) -> list[Path]:
    """The corpus's files: the file given (of a known kind), or every known file under the folder, sorted."""
    root = Path(path)
    if root.is_dir():
        files = sorted(file for file in root.rglob("*") if file.is_file() and kind_of(file))
        if not files:
            known = ", ".join(sorted({*KINDS, *(suffix + ".gz" for suffix in KINDS if suffix != ".parquet")}))
            raise RuevalError(f"{root}: no corpus files in the folder (expected {known})")
        return files
    if not root.exists():
        raise DataError(str(root), "no such file or folder")
    if not kind_of(root):
        raise DataError(
            str(root), "not a corpus file: expected .txt, .jsonl, .ndjson (or one of these .gz) or .parquet"
        )
    return [root]


def kind_of(file: Path) -> str | None:
    suffixes = [s.lower() for s in file.suffixes[-2:]]
    if suffixes and suffixes[-1] == ".gz" and len(suffixes) == 2 and suffixes[0] != ".parquet":
        return KINDS.get(suffixes[0])
    return KINDS.get(suffixes[-1]) if suffixes else None


def pieces(file: Path, fields: Sequence[str] = ("text",)) -> Iterator[Piece]:
    """The file's documents in pieces (see the module's docstring)."""
    kind = kind_of(file)
    if kind == "parquet":
        yield from _parquet_pieces(file, fields)
        return
    with reading(str(file)), _open(file) as stream:
        yield from _text_pieces(stream, str(file)) if kind == "text" else _jsonl_pieces(stream, str(file), fields)


def _open(file: Path) -> Stream:
    return gzip.open(file, "rb") if file.suffix.lower() == ".gz" else file.open("rb")


def _text_pieces(stream: Stream, file: str) -> Iterator[Piece]:
    """A text file cut after its last ASCII space or line break of each chunk, so no token is cut (a run of
    CHUNK_BYTES without one is cut between characters, and no n-gram spans that cut)."""
    rest, line, first = b"", 1, True
    while chunk := _read(stream, file):
        chunk, first = chunk.removeprefix(BOM) if first else chunk, False
        text = rest + chunk
        cut = max(text.rfind(space) for space in ASCII_SPACES) + 1
        goes_on = cut > 0
        if not goes_on:
            cut = len(text)
            while cut > 0 and text[cut - 1] & 0xC0 == 0x80:  # never inside a character
                cut -= 1
            cut = cut - 1 if cut > 0 and text[cut - 1] >= 0xC0 else cut
        text, rest = text[:cut], text[cut:]
        line = _check_utf8(text, file, line)
        yield Piece(text if goes_on else text + SEPARATOR, goes_on, len(chunk), 0)
    _check_utf8(rest, file, line)
    yield Piece(rest + SEPARATOR, False, 0, 1)


def _check_utf8(text: bytes, file: str, line: int) -> int:
    """The line after the text; a DataError naming the line if the text is not UTF-8."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(file, "not UTF-8 text", line + text.count(b"\n", 0, e.start)) from None
    return line + text.count(b"\n")


def _read(stream: Stream, file: str) -> bytes:
    try:
        return stream.read(CHUNK_BYTES)
    except (EOFError, gzip.BadGzipFile) as e:
        raise DataError(file, f"corrupt gzip data ({e})") from None


def _jsonl_pieces(stream: Stream, file: str, fields: Sequence[str]) -> Iterator[Piece]:
    rest, line = b"", 0
    keys = [f'"{field}"'.encode() for field in fields]
    while chunk := _read(stream, file):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        if len(rest) > MAX_LINE_BYTES:
            raise DataError(file, f"line longer than {MAX_LINE_BYTES // 2**20} MB: not read", line + len(lines) + 1)
        texts = []
        for raw in lines:
            line += 1
            texts += _texts(raw, file, line, fields, keys)
        yield Piece(b"".join(text + SEPARATOR for text in texts), False, len(chunk), len(texts))
    texts = _texts(rest, file, line + 1, fields, keys)
    yield Piece(b"".join(text + SEPARATOR for text in texts), False, 0, len(texts))


def _texts(raw: bytes, file: str, line: int, fields: Sequence[str], keys: Sequence[bytes]) -> list[bytes]:
    """The text fields of one JSON line (none for a blank line), as UTF-8."""
    if not raw.strip():
        return []
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as e:
        raise DataError(file, f"malformed JSON ({e.msg}, column {e.colno})", line) from None
    except UnicodeDecodeError:
        raise DataError(file, "not UTF-8 text", line) from None
    if not isinstance(record, dict):
        raise DataError(file, f"expected a JSON object, got {type(record).__name__}", line)
    if any(raw.count(key) > 1 for key in keys):
        parse_json(raw, file, line)  # a key given twice is an error, never one of its values taken
    texts = []
    for field in fields:
        if field not in record:
            raise DataError(file, "missing (name the corpus's text fields)", line, field)
        value = record[field]
        if value is not None and not isinstance(value, str):
            raise DataError(file, f"expected text, got {type(value).__name__}", line, field)
        if value:
            texts.append(value.encode("utf-8", "surrogatepass"))
    return texts


def _parquet_pieces(file: Path, fields: Sequence[str]) -> Iterator[Piece]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with reading(str(file)):
        try:
            yield from _parquet_batches(pq.ParquetFile(file), str(file), fields)
        except pa.ArrowException as e:
            raise DataError(str(file), f"not a readable Parquet file ({str(e)[:200]})") from None


def _parquet_batches(parquet: Any, file: str, fields: Sequence[str]) -> Iterator[Piece]:
    import pyarrow as pa

    schema = parquet.schema_arrow
    for field in fields:
        if field not in schema.names:
            shown = ", ".join(schema.names[:10])
            raise DataError(file, f"no such column (the file's columns: {shown})", field=field)
        kind = schema.field(field).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise DataError(file, f"expected a text column, got {kind}", field=field)
    metadata = parquet.metadata
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        columns = [row_group.column(i) for i in range(row_group.num_columns)]
        columns = [column for column in columns if column.path_in_schema in fields]
        size = sum(column.total_uncompressed_size for column in columns)
        rows = max(1, CHUNK_BYTES * row_group.num_rows // max(1, size))
        for batch in parquet.iter_batches(batch_size=rows, row_groups=[group], columns=list(fields)):
            texts = [
                value
                for column in batch.columns
                for value in column.cast(pa.large_binary()).to_pylist()
                if value  # a null or empty text
            ]
            yield Piece(b"".join(text + SEPARATOR for text in texts), False, 0, len(texts))
        yield Piece(b"", False, sum(column.total_compressed_size for column in columns), 0)
