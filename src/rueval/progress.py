"""Progress bars for loops over data, drawn on stderr and only on a terminal."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import track

T = TypeVar("T")
_console = Console(stderr=True)


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    if not _console.is_terminal:  # logs and pipes get no bar
        yield from items
        return
    yield from track(items, description=description, total=total, console=_console, transient=True)
