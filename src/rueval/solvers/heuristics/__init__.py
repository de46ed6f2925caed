"""The rule-based heuristics of Iazykova et al. (2021), "Unreasonable Effectiveness of Rule-Based
Heuristics in Solving Russian SuperGLUE Tasks", Sections 3.1-3.9 and Tables 1-7.

Each task's rules are tried in order and the first that fires gives the prediction; where none
fires, a trivial baseline does (majority, random or weighted-random, fitted on the train split),
as in the paper's Table 8. Tasks without rules (RWSD, for which the paper found none, and the
TAPE tasks) get the baseline alone.

Which rules: the paper's Table 8 combines, per task, the rules "that led towards the best
score", chosen on the leaderboard's test scores. rueval chooses on the train split instead
(``rules="fitted"``, the default): in order, a rule is kept if, on the labelled train examples
it would take from the rules kept before it, it is right more often than the fallback is
expected to be. A rule that never fires on train is kept: there is no evidence against it.
A task that borrows another's train split (LiDiRus: TERRa's) keeps every rule, since its rules
were written for its own data; so does ``rules="all"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from rueval.errors import RuevalError
from rueval.metrics import is_correct
from rueval.progress import progress
from rueval.results import NO_RULE, RuleCoverage
from rueval.solvers.base import Solver
from rueval.solvers.heuristics import danetqa, lidirus, muserc, parus, rcb, rucos, russe, terra
from rueval.solvers.heuristics.base import Rule
from rueval.solvers.trivial import STRATEGIES, TrivialSolver
from rueval.tasks import Example, Task, get_task

RULES: dict[str, tuple[Rule, ...]] = {
    "lidirus": lidirus.RULES,
    "rcb": rcb.RULES,
    "parus": parus.RULES,
    "muserc": muserc.RULES,
    "terra": terra.RULES,
    "russe": russe.RULES,
    "danetqa": danetqa.RULES,
    "rucos": rucos.RULES,
}


def first_prediction(rules: Sequence[Rule], example: Example) -> Any | None:
    """The prediction of the first rule that fires on the example, or None."""
    for rule in rules:
        prediction = rule.apply(example)
        if prediction is not None:
            return prediction
    return None


RULE_CHOICES = ("fitted", "all")


class HeuristicSolver(Solver):
    """The paper's rules, with a trivial baseline for the examples no rule covers."""

    name = "heuristic"

    def __init__(self, seed: int = 0, fallback: str = "majority", rules: str = "fitted"):
        if fallback not in STRATEGIES:
            raise RuevalError(f"unknown fallback '{fallback}'; expected one of: {', '.join(STRATEGIES)}")
        if rules not in RULE_CHOICES:
            raise RuevalError(f"unknown rule choice '{rules}'; expected one of: {', '.join(RULE_CHOICES)}")
        self.fallback = TrivialSolver(fallback, seed)
        self.choice = rules
        self.rules: tuple[Rule, ...] = ()

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        self.fallback.fit(task, train)
        self.rules = RULES.get(task.name, ())
        if self.choice == "fitted" and task.train_from is None:
            self.rules = select_rules(task, self.rules, train, self.fallback)

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        examples = list(examples)
        predictions = [first_prediction(self.rules, example) for example in examples]
        uncovered = [i for i, prediction in enumerate(predictions) if prediction is None]
        for i, prediction in zip(uncovered, self.fallback.predict(task, [examples[i] for i in uncovered]), strict=True):
            predictions[i] = prediction
        return predictions


def select_rules(
    task: Task, rules: Sequence[Rule], train: Sequence[Example], fallback: TrivialSolver
) -> tuple[Rule, ...]:
    """The rules worth trying before the fallback, judged in order on the labelled train examples:
    a rule stays if it is right on more of the examples it takes (those no rule kept before it
    takes) than the fallback is expected to be on them, or if it takes none."""
    remaining = [example for example in train if example.label is not None]
    kept = []
    for rule in rules:
        taken = {i: p for i, example in enumerate(remaining) if (p := rule.apply(example)) is not None}
        rule_right = sum(is_correct(task, remaining[i].label, p) for i, p in taken.items())
        fallback_right = sum(
            fallback.chance_right(task, remaining[i], partial(is_correct, task, remaining[i].label)) for i in taken
        )
        if not taken or rule_right > fallback_right:
            kept.append(rule)
            remaining = [example for i, example in enumerate(remaining) if i not in taken]
    return tuple(kept)


def coverage(task: Task | str, examples: Iterable[Example]) -> list[RuleCoverage]:
    """Each rule of the task measured on its own over the labelled examples (the paper's Tables 1-7),
    then the count of examples where no rule fires. Unlabelled examples are skipped."""
    task = get_task(task) if isinstance(task, str) else task
    rules = RULES.get(task.name, ())
    covered, correct = [0] * len(rules), [0] * len(rules)
    uncovered = 0
    labelled = [example for example in examples if example.label is not None]
    for example in progress(labelled, f"heuristics on {task.name}", total=len(labelled)):
        fired = False
        for i, rule in enumerate(rules):
            prediction = rule.apply(example)
            if prediction is not None:
                fired = True
                covered[i] += 1
                correct[i] += is_correct(task, example.label, prediction)
        uncovered += not fired
    rows = [RuleCoverage(r.name, r.description, r.target, n, k) for r, n, k in zip(rules, covered, correct)]
    return [*rows, RuleCoverage(NO_RULE, "left to the fallback baseline", None, uncovered, 0)]


__all__ = [
    "NO_RULE",
    "RULES",
    "RULE_CHOICES",
    "HeuristicSolver",
    "Rule",
    "RuleCoverage",
    "coverage",
    "first_prediction",
    "select_rules",
]
