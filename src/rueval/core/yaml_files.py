"""YAML files written by users (task files), read safely and within bounds: PyYAML's safe loader (no
tags that build Python objects), at most ``MAX_BYTES``, and before any value is built the document is
checked: a key given twice in one mapping, aliases that expand to more than ``MAX_VALUES`` values (a
"billion laughs" bomb), a value that contains itself, and a lone surrogate (``"\\ud800"``, not Unicode)
are each an error naming the file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, shown

MAX_BYTES = 4 * 2**20  # a task file is a few KB
MAX_VALUES = 100_000  # values in a document, each alias counted as the values it stands for


def read_mapping(file: Path) -> dict[str, tuple[Any, int]]:
    """A YAML file's top-level keys, each with its value and line; a DataError naming the file and line
    if the file is not a mapping of unique keys within bounds."""
    import yaml  # only where YAML is read: the command line starts without it

    try:
        with open(file, "rb") as stream:
            raw = stream.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise DataError(str(file), f"larger than {MAX_BYTES // 2**20} MB: not read")
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(str(file), f"cannot read: {e}") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if not isinstance(node, yaml.MappingNode):
            line = node.start_mark.line + 1 if node is not None else None
            raise DataError(str(file), "expected a mapping of keys (name: value)", line)
        _check(node, file)
        construct = loader.construct_object
        return {
            str(construct(key, deep=True)): (construct(value, deep=True), key.start_mark.line + 1)
            for key, value in node.value
        }
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or "malformed"
        if "could not determine a constructor for the tag" in problem:
            problem = f"{problem.split()[-1]} is not read: rueval runs no code from a YAML file"
        raise DataError(str(file), f"not valid YAML: {problem}", mark.line + 1 if mark else None) from None
    except RecursionError:
        raise DataError(str(file), "not read: its values are nested too deeply") from None
    finally:
        loader.dispose()


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
