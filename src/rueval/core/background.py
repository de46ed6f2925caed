"""Work started in a thread of its own while the process goes on: a daemon thread (a run that fails does
not wait for it), its result, or what it raised, a Future's."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def in_background(work: Callable[[], T], name: str) -> Future[T]:
    """``work()`` started now in a daemon thread called ``name``."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as e:  # noqa: BLE001 - handed to whoever asks for the result
            future.set_exception(e)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
