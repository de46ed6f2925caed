"""The rule-based heuristics of Iazykova et al. (2021), "Unreasonable Effectiveness of Rule-Based
Heuristics in Solving Russian SuperGLUE Tasks", Sections 3.1-3.9 and Tables 1-7.

Each task's rules are tried in order and the first that fires gives the prediction; where none
fires, a trivial baseline does (majority, random or weighted-random, fitted on the train split),
as in the paper's Table 8. Tasks without rules (RWSD, for which the paper found none, and the
TAPE tasks) get the baseline alone. Where the paper and the authors' code differ, each task's
module says so and which one it follows: the code, unless the code's version is an evident slip.

Which rules: the paper's Table 8 combines, per task, the rules "that led towards the best
score", chosen on the leaderboard's test scores. rueval chooses on the train split instead
(``rules="fitted"``, the default), by the task's own score (``rueval.scoring.task_scores.score_task``: RCB's
mean of macro-F1 and accuracy, MuSeRC's F1a and EM, RuCoS's F1 and EM, accuracy elsewhere):
in order, a rule is kept if the kept rules, then it, then the fallback score higher on the
labelled train examples than the kept rules and the fallback alone. The majority fallback is
deterministic; a random one is scored as the mean over FALLBACK_DRAWS seeded draws, the same
draws for every comparison, so that a rule is judged against the fallback's expected score
rather than one lucky or unlucky draw. A rule that never fires on train is kept: there is no
evidence against it. A task that borrows another's train split (LiDiRus: TERRa's) keeps every
rule, since its rules were written for its own data; so does ``rules="all"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from statistics import fmean
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.progress import progress, step
from rueval.results import NO_RULE, RuleCoverage
from rueval.scoring.task_scores import is_correct, score_task
from rueval.solvers.base import Solver
from rueval.solvers.heuristics import danetqa, lidirus, muserc, parus, rcb, rucos, russe, terra
from rueval.solvers.heuristics.base import Rule, memoized_texts
from rueval.solvers.options import RULE_CHOICES
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
# Tasks whose rules read long texts, lemmatised in bulk before the rules run one example at a time.
PREFETCH: dict[str, Callable[[Iterable[Example]], None]] = {"rucos": rucos.prefetch}
FALLBACK_DRAWS = 5  # seeded draws of a random fallback that the rule choice averages over


def first_prediction(rules: Sequence[Rule], example: Example) -> Any | None:
    """The prediction of the first rule that fires on the example, or None."""
    for rule in rules:
        prediction = rule.apply(example)
        if prediction is not None:
            return prediction
    return None


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
            with memoized_texts(), step(f"choosing {task.name}'s rules on {len(train):,} train examples"):
                _prefetch(task, train)
                self.rules = select_rules(task, self.rules, train, self.fallback)

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        examples = list(examples)
        with memoized_texts():
            if self.rules:
                _prefetch(task, examples)
            predictions = [first_prediction(self.rules, example) for example in examples]
        uncovered = [i for i, prediction in enumerate(predictions) if prediction is None]
        for i, prediction in zip(uncovered, self.fallback.predict(task, [examples[i] for i in uncovered]), strict=True):
            predictions[i] = prediction
        return predictions


def _prefetch(task: Task, examples: Iterable[Example]) -> None:
    if task.name in PREFETCH:
        PREFETCH[task.name](examples)


def select_rules(
    task: Task, rules: Sequence[Rule], train: Sequence[Example], fallback: TrivialSolver
) -> tuple[Rule, ...]:
    """The rules worth trying before the fallback, chosen in order by the task's score on the
    labelled train examples: a rule stays if adding it after the rules kept so far raises the
    score of those rules plus the fallback, or if it fires on none of the examples."""
    labelled = [example for example in train if example.label is not None]
    if not rules or not labelled:
        return tuple(rules)
    draws = _fallback_draws(task, labelled, fallback)

    def score(chosen: Sequence[list[Any]]) -> float:
        predictions = [next((p[i] for p in chosen if p[i] is not None), None) for i in range(len(labelled))]
        return fmean(
            score_task(task, labelled, [d if p is None else p for p, d in zip(predictions, draw, strict=True)]).score
            for draw in draws
        )

    kept: list[Rule] = []
    kept_predictions: list[list[Any]] = []
    best = score(kept_predictions)
    for rule in rules:
        predictions = [rule.apply(example) for example in labelled]
        if all(p is None for p in predictions):
            kept.append(rule)
            continue
        candidate = score([*kept_predictions, predictions])
        if candidate > best:
            kept.append(rule)
            kept_predictions.append(predictions)
            best = candidate
    return tuple(kept)


def _fallback_draws(task: Task, labelled: Sequence[Example], fallback: TrivialSolver) -> list[list[Any]]:
    """The fallback's predictions for the labelled examples: the one majority answer each, or
    FALLBACK_DRAWS seeded random draws (from fresh baselines, so the fallback's own draws for the
    scored split are not consumed)."""
    if fallback.name == "majority":
        return [fallback.predict(task, labelled)]
    draws = []
    for draw in range(FALLBACK_DRAWS):
        baseline = TrivialSolver(fallback.name, fallback.seed + draw)
        baseline.fit(task, labelled)
        draws.append(baseline.predict(task, labelled))
    return draws


def coverage(task: Task | str, examples: Iterable[Example]) -> list[RuleCoverage]:
    """Each rule of the task measured on its own over the labelled examples (the paper's Tables 1-7),
    then the count of examples where no rule fires. Unlabelled examples are skipped."""
    task = get_task(task) if isinstance(task, str) else task
    rules = RULES.get(task.name, ())
    covered, correct = [0] * len(rules), [0] * len(rules)
    uncovered = 0
    labelled = [example for example in examples if example.label is not None]
    with memoized_texts():
        _prefetch(task, labelled)
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
    "FALLBACK_DRAWS",
    "NO_RULE",
    "RULES",
    "HeuristicSolver",
    "Rule",
    "RuleCoverage",
    "coverage",
    "first_prediction",
    "select_rules",
]
