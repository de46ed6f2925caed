"""The solver interface: anything that turns examples into predictions."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rueval.tasks import Example, Task


@dataclass(frozen=True)
class ModelSize:
    """How big a solver's model is, for the run's industrial figures."""

    parameters: int | None = None
    megabytes: float | None = None  # weights in memory or on disk, in MiB


@dataclass(frozen=True, order=True)
class Setting:
    """A few-shot setting (TAPE, Section 4.1): k demonstrations, drawn as episode ``episode``."""

    k: int = 0
    episode: int = 0


class Solver(ABC):
    """Sees examples, never files. ``fit`` gets the task's labelled train examples (maybe none);
    ``predict`` returns one prediction per example, in the form of ``Example.label``."""

    name: str

    @abstractmethod
    def fit(self, task: Task, train: Sequence[Example]) -> None: ...

    @abstractmethod
    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]: ...

    def training_report(self, task: Task) -> dict[str, Any]:
        """What fitting the task cost, for solvers that train (time, examples/s, memory, final loss); empty by
        default."""
        return {}

    def size(self) -> ModelSize | None:
        """The model's size, if the solver has a model: parameters and megabytes. None by default.
        Report what is loaded; do not load a model just to answer."""
        return None
