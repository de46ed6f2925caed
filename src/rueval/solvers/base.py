"""The solver interface: anything that turns examples into predictions. A pooled solver (a language
model) answers through an engine's requests instead, so that a run computes the requests of all its
tasks and settings together."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from rueval.tasks import Example, Task
from rueval.tasks.prompts import TaskPrompt

if TYPE_CHECKING:
    from rueval.models.base import Request
    from rueval.models.engine import Engine


@dataclass(frozen=True)
class ModelSize:
    """How big a solver's model is, for the run's industrial figures."""

    parameters: int | None = None
    megabytes: float | None = None  # weights in memory or on disk, in MiB


@dataclass(frozen=True, order=True)
class Setting:
    """A few-shot setting: k demonstrations, drawn as episode ``episode`` (TAPE, Section 4.1: one set
    before every item), or with ``per_item_seed`` for each item in turn by one generator of that seed
    (MERA's, as lm-eval's few-shot sampler draws them)."""

    k: int = 0
    episode: int = 0
    per_item_seed: int | None = None


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

    @property
    def pooled(self) -> PooledSolver[Any] | None:
        """This solver as a pooled one, if it answers through an engine's requests; None (the default):
        a run fits and applies it task by task."""
        return None


class TaskPlan(Protocol):
    """What a pooled solver asks of the engine for one task in every setting."""

    @property
    def requests(self) -> Sequence[Request]: ...


PlanT = TypeVar("PlanT", bound=TaskPlan)  # a pooled solver's own plans, which it answers


@dataclass(frozen=True)
class Exchange:
    """What one example asked of the model, in order, and what each request returned (its sample log)."""

    requests: tuple[Request, ...]
    results: tuple[Any, ...]


@dataclass(frozen=True)
class TaskAnswers:
    """A pooled solver's answers to one task in every setting."""

    by_setting: dict[Setting, list[Any]]  # one prediction per example, in the form of Example.label
    normalized: dict[Setting, list[Any]]  # options by per-byte log-likelihood (lm-eval's acc_norm), where scored so
    protocol: str  # how the task was scored, as results.json states it: e.g. loglik, ppl-chat-template, generate
    unmatched: int | None  # generated answers to choice questions that named no option (None: none were generated)
    exchanges: dict[Setting, list[Exchange]]  # per example


class PooledSolver(ABC, Generic[PlanT]):
    """A solver that answers through an engine: it plans a task's requests in every setting, the run
    computes the requests of all its tasks in one engine call (identical requests and shared prefixes
    once), and the solver answers each task from their results."""

    name: str
    engine: Engine

    @abstractmethod
    def plan_task(
        self,
        task: Task,
        train: Sequence[Example],
        examples: Sequence[Example],
        settings: Sequence[Setting],
        prompt: TaskPrompt | None = None,
    ) -> PlanT:
        """The task's requests in every setting, asked with ``prompt`` (default: the task's own)."""

    @abstractmethod
    def answer_task(self, plan: PlanT, results: Mapping[Request, Any]) -> TaskAnswers: ...
