"""The solver interface: anything that turns examples into predictions."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any

from rueval.tasks import Example, Task


class Solver(ABC):
    """Sees examples, never files. ``fit`` gets the task's labelled train examples (maybe none);
    ``predict`` returns one prediction per example, in the form of ``Example.label``."""

    name: str

    @abstractmethod
    def fit(self, task: Task, train: Sequence[Example]) -> None: ...

    @abstractmethod
    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]: ...
