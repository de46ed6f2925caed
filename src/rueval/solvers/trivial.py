"""The trivial baselines of the heuristics paper (Iazykova et al., 2021, Section 2):
majority class, uniform random choice and random choice weighted by train label proportions.

Labels come from the task: the label space for classification (a multiple-choice item's own
letters), 0/1 for each Ethics category.
Span tasks have no label space: RuCoS picks among the passage's entity mentions (the most
mentioned one is the majority), MultiQ and CheGeKa among the train answers.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from rueval.core.errors import RuevalError
from rueval.solvers.base import Solver
from rueval.tasks import Example, Task

STRATEGIES = ("majority", "random", "weighted-random")


class TrivialSolver(Solver):
    """One of STRATEGIES; label counts come from the train split given to ``fit``."""

    def __init__(self, strategy: str, seed: int = 0):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}")
        self.name = strategy
        self.seed = seed
        self._task_name = ""
        self._rng = random.Random(seed)
        self._priors: list[Counter] = []

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        # Seeded per task, so a task's predictions do not depend on which tasks ran before it.
        self._task_name = task.name
        self._rng = random.Random(f"{self.seed}/{task.name}")
        labelled = [e.label for e in train if e.label is not None]
        if task.kind == "multilabel":
            self._priors = [Counter(label[i] for label in labelled) for i in range(len(task.categories))]
        elif task.kind == "classification":
            self._priors = [Counter(labelled)]
        else:
            self._priors = [Counter(label[0] for label in labelled)]

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        return [self._predict_one(task, example) for example in examples]

    def _predict_one(self, task: Task, example: Example) -> Any:
        if task.kind == "multilabel":
            return tuple(self._choose((0, 1), prior) for prior in self._priors)
        return self._choose(*self._options(task, example))

    def _options(self, task: Task, example: Example) -> tuple[Sequence[Any], Counter]:
        """What a prediction is chosen from, and the counts that weigh the choice."""
        if task.kind == "classification":
            return task.labels_of(example), self._priors[0]
        if example.candidates:
            return tuple(dict.fromkeys(example.candidates)), Counter(example.candidates)
        prior = self._priors[0]
        return tuple(prior), prior

    def _check(self, options: Sequence[Any], counts: Counter) -> None:
        if not options or (self.name != "random" and not any(counts[option] for option in options)):
            raise RuevalError(
                f"{self._task_name}: the {self.name} baseline needs labelled train examples, and the data has none"
            )

    def _choose(self, options: Sequence[Any], counts: Counter) -> Any:
        self._check(options, counts)
        if self.name == "majority":
            return max(options, key=lambda option: counts[option])  # ties: the first option
        if self.name == "random":
            return self._rng.choice(options)
        return self._rng.choices(options, weights=[counts[option] for option in options])[0]
