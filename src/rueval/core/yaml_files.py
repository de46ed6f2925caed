"""YAML files written by users (lm-evaluation-harness task files), checked within bounds before lm-eval
reads them: at most ``MAX_BYTES``, composed by PyYAML's safe loader into nodes (no value built, no tag
resolved), then checked: a key given twice in one mapping, aliases that expand to more than
``MAX_VALUES`` values (a "billion laughs" bomb), a value that contains itself, and a lone surrogate
(``"\\ud800"``, not Unicode) are each an error naming the file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, shown

MAX_BYTES = 4 * 2**20  # a task file is a few KB
MAX_VALUES = 100_000  # values in a document, each alias counted as the values it stands for


def is_special(file: Path) -> bool:
    """A FIFO, socket or device: opening it may wait for ever."""
    return file.is_fifo() or file.is_socket() or file.is_char_device() or file.is_block_device()


def _text(file: Path) -> str:
    """The file's text: at most MAX_BYTES of UTF-8 (a byte-order mark read past); a FIFO or a device is
    refused before it is opened (opening one would wait for a writer)."""
    if is_special(file):
        raise DataError(str(file), "not a regular file: not read")
    try:
        with open(file, "rb") as stream:
            raw = stream.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise DataError(str(file), f"larger than {MAX_BYTES // 2**20} MB: not read")
        return raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(str(file), f"cannot read: {e}") from None


def _check(root: Any, file: Path) -> None:
    """The document's values counted with aliases expanded, each mapping's keys unique, no value inside
    itself, every text Unicode; walked once per node (a shared node's count is remembered)."""
    import yaml

    counts: dict[int, int] = {}
    open_nodes: set[int] = set()

    def count(node: Any) -> int:
        if id(node) in counts:
            return counts[id(node)]
        line = node.start_mark.line + 1
        if id(node) in open_nodes:
            raise DataError(str(file), "a value that contains itself (a recursive alias)", line)
        if isinstance(node, yaml.ScalarNode):
            if not node.value.isascii():
                _unicode(node.value, file, line)
            counts[id(node)] = 1
            return 1
        open_nodes.add(id(node))
        children = node.value
        if isinstance(node, yaml.MappingNode):
            _unique_keys(node, file)
            children = [child for pair in node.value for child in pair]
        total = 1
        for child in children:
            total += count(child)
            if total > MAX_VALUES:
                raise DataError(str(file), f"more than {MAX_VALUES} values once its aliases are expanded", line)
        open_nodes.discard(id(node))
        counts[id(node)] = total
        return total

    count(root)


def _unique_keys(node: Any, file: Path) -> None:
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key.value, str) or key.tag == "tag:yaml.org,2002:merge":
            continue  # a key that is a list or mapping (refused when built); a << merge
        line = key.start_mark.line + 1
        if (key.tag, key.value) in seen:
            first = seen[key.tag, key.value]
            raise DataError(str(file), f"key given twice (first on line {first})", line, shown(key.value)[1:-1])
        seen[key.tag, key.value] = line


def _unicode(text: str, file: Path, line: int) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DataError(
            str(file), f"a lone surrogate (\\u{ord(text[e.start]):04x}) in a text: not Unicode", line
        ) from None


def composed(file: Path) -> Any:
    """A YAML file's document as PyYAML's node graph, checked as ``read_mapping`` checks it but built into no
    values: tags stay as they are written (an lm-evaluation-harness task file's ``!function``)."""
    import yaml

    try:
        node = yaml.compose(_text(file), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        if not isinstance(node, yaml.MappingNode):
            line = node.start_mark.line + 1 if node is not None else None
            raise DataError(str(file), "expected a mapping of keys (name: value)", line)
        _check(node, file)
        return node
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise DataError(
            str(file), f"not valid YAML: {e.problem or 'malformed'}", mark.line + 1 if mark else None
        ) from None
    except RecursionError:
        raise DataError(str(file), "not read: its values are nested too deeply") from None
