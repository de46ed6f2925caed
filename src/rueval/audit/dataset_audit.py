"""Dataset audit: how much of a task can be solved without reading it.

Following Iazykova et al. (2021), Sections 2 and 4: the label distribution of every split and
what predicting from the train label prior alone scores (their "leakage" finding: on the six RSG
accuracy tasks, replicating the train label shares expects 0.538 accuracy where balanced labels
would give 0.472); the lemmas most predictive of each label (their ELI5 look at class-specific
tokens); exact and near duplicates between train and the evaluation splits; how much the
rule-based heuristics cover; and the task's health: its chance, majority and heuristic levels, the
share of items every baseline gets right, and the smallest difference its official test set shows.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean, median
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.feature_selection import chi2

from rueval import __version__
from rueval.audit.duplicates import NEAR_DUPLICATE_THRESHOLD, SplitInputs, duplicate_pairs, duplicates, input_parts
from rueval.core.progress import set_level, step
from rueval.core.text import lemmas_of, words
from rueval.data import DataSource, Split, load_train, open_data
from rueval.results import AuditResult, Coverage, TaskAudit
from rueval.scoring.decisions import DEFAULT_DISCORDANCE, minimum_detectable_effect
from rueval.scoring.task_scores import is_correct, score_task
from rueval.solvers.heuristics import RULES, HeuristicSolver, coverage
from rueval.solvers.trivial import TrivialSolver
from rueval.tasks import BENCHMARKS, Example, Task

TOP_ARTIFACTS = 10
BESIDE_MIN_EXAMPLES = 10_000  # train examples from which the near-duplicate search gets its own process


@dataclass(frozen=True)
class AuditData:
    """The splits one task is audited on: the split priors come from and every evaluation split."""

    task: Task
    train: Split | None
    evals: list[Split]
    borrowed_train: str | None = None  # the task whose train split stands in (LiDiRus: TERRa)


def load_audit_data(source: DataSource, task: Task) -> AuditData:
    """Train (LiDiRus borrows TERRa's, as in the paper) and every other split the data has."""
    evals = [source.load(task, split) for split in task.splits if split != "train" and source.has_split(task, split)]
    train = load_train(source, task)
    if train is None and not evals:
        raise source.missing(task, "test")
    lender = task.train_from
    borrowed = lender.name if lender and train is not None and not source.has_split(task, "train") else None
    return AuditData(task, train, evals, borrowed)


def audit(tasks: Sequence[Task], data: str | None = None, out: Path = Path("audits")) -> AuditResult:
    """Audit ``tasks`` on ``data`` (default: the bundled samples) and write OUT/audit.json."""
    source = open_data(data)
    loaded = [load_audit_data(source, task) for task in tasks]  # bad input fails before any work
    results = {item.task.name: audit_task(item) for item in loaded}
    report = AuditResult(
        data=source.description,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        rueval_version=__version__,
        near_duplicate_threshold=NEAR_DUPLICATE_THRESHOLD,
        leakage=leakage_summary(results),
        tasks=results,
    )
    report.write(out / "audit.json")
    return report


def audit_task(item: AuditData) -> TaskAudit:
    """Every section of the audit for one task (see the module docstring)."""
    task, train = item.task, item.train
    labelled_evals = [split for split in item.evals if split.labelled]
    labelled = ([train] if train and train.labelled else []) + labelled_evals
    notes = [f"{split.name} has no gold labels" for split in item.evals if not split.labelled]
    if train is None:
        notes.append("no train split: no prior-only scores, artifact tokens or duplicates")
    elif not train.labelled:
        notes.append("the train split has no gold labels: no prior-only scores or artifact tokens")
    if item.borrowed_train:
        notes.append(f"train is {item.borrowed_train}'s train split: its label prior stands in, as in the paper")
    if task.kind == "span":
        notes.append("span task: answer lengths in words instead of a label distribution; no artifact tokens")
    result = TaskAudit(
        benchmark=task.benchmark,
        kind=task.kind,
        splits={split.name: _describe(split) for split in [*([train] if train else []), *item.evals]},
        labels={split.name: label_distribution(task, split.examples) for split in labelled},
        notes=notes,
    )
    if train is not None and len(train.examples) >= BESIDE_MIN_EXAMPLES and (os.cpu_count() or 1) >= 2:
        # the near-duplicate search and the rule coverage are the largest costs on RuCoS-sized data
        searched = f"{task.name}: duplicates of {len(train.examples):,} train examples, in a second process"
        with step(searched), _search_process() as pool:
            found = pool.submit(duplicate_pairs, SplitInputs.of(train), [SplitInputs.of(split) for split in item.evals])
            _label_sections(result, item, labelled)
            result.duplicates = found.result()
        return result
    if train is not None:
        with step(f"{task.name}: duplicates of {len(train.examples):,} train examples in {len(item.evals)} split(s)"):
            result.duplicates = duplicates(train, item.evals)
    _label_sections(result, item, labelled)
    return result


def _label_sections(result: TaskAudit, item: AuditData, labelled: list[Split]) -> None:
    """The sections that read the labels (of the ``labelled`` splits): prior-only scores, artifact
    tokens, rule coverage."""
    task, train = item.task, item.train
    if train is not None and train.labelled:
        evals = [split for split in labelled if split is not train]
        result.prior_only = {split.name: prior_only(task, train.examples, split.examples) for split in evals}
        if task.kind != "span":
            with step(f"{task.name}: artifact tokens, lemmatising {len(train.examples):,} train examples"):
                result.artifacts = artifact_tokens(task, train.examples)
        if evals:  # the split `rueval run` scores: test when labelled, else val
            with step(f"{task.name}: health on {len(evals[-1].examples):,} {evals[-1].name} examples"):
                result.health = task_health(task, train.examples, evals[-1])
    if task.name in RULES:
        for split in labelled:  # the last row of each: no rule fires
            with step(f"{task.name}: rule coverage of {len(split.examples):,} {split.name} examples"):
                result.heuristics[split.name] = Coverage(len(split.examples), coverage(task, split.examples))


def _search_process() -> ProcessPoolExecutor:
    """A process for the duplicate search, started afresh (spawned, not forked: it holds only the
    texts it is sent, not a copy of everything this process has loaded) and quiet (a terminal
    shows one live progress display)."""
    return ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("spawn"), initializer=set_level, initargs=(True,)
    )


def _describe(split: Split) -> dict[str, Any]:
    return {"file": split.file, "n": len(split.examples), "labelled": split.labelled, "sha256": split.sha256}


def label_distribution(task: Task, examples: Sequence[Example]) -> dict[str, Any]:
    """Counts and shares of each label; per category of a multilabel task; answer lengths of a span task."""
    golds = [e.label for e in examples]
    if task.kind == "span":
        lengths = [len(words(gold[0])) for gold in golds]
        stats = {"mean": fmean(lengths), "median": median(lengths), "min": min(lengths), "max": max(lengths)}
        return {"answer_words": stats}
    if task.kind == "multilabel":
        return {
            category: _shares(Counter(gold[i] for gold in golds), (1, 0)) for i, category in enumerate(task.categories)
        }
    offered = dict.fromkeys(label for e in examples for label in task.labels_of(e))  # A-E where items go to (E)
    return _shares(Counter(golds), [label for label in task.labels if label in offered])


def _shares(counts: Counter, labels: Sequence[Any]) -> dict[str, dict[str, float]]:
    total = sum(counts.values())
    return {str(label): {"count": counts[label], "share": counts[label] / total} for label in labels}


def prior_only(task: Task, train: Sequence[Example], examples: Sequence[Example]) -> dict[str, Any]:
    """What the train label prior alone scores on ``examples``: the majority baseline's metrics
    and, in closed form, the expected accuracy of guessing by train shares vs. by uniform choice."""
    solver = TrivialSolver("majority")
    solver.fit(task, train)
    scores = score_task(task, examples, solver.predict(task, examples))
    result: dict[str, Any] = {"majority": {"metrics": scores.metrics, "score": scores.score}}
    if task.kind != "span":
        result["weighted_random_expected_accuracy"] = 100 * expected_weighted_random_accuracy(task, train, examples)
        result["balanced_expected_accuracy"] = balanced_expected_accuracy(task, examples)
    return result


def task_health(task: Task, train: Sequence[Example], split: Split) -> dict[str, Any]:
    """Whether the task can tell models apart, on one labelled split (x100): the chance accuracy (a uniform
    guess), the task scores of the majority class and of the heuristics with majority for the rest (both fitted
    on train, as -m majority and -m heuristic), the share of items every one of these baselines gets right, and
    the minimum detectable effect of the official test set at DEFAULT_DISCORDANCE (rueval.scoring.decisions)."""
    examples = split.examples
    baselines: dict[str, TrivialSolver | HeuristicSolver] = {"majority": TrivialSolver("majority", seed=0)}
    if task.name in RULES:
        baselines["heuristic"] = HeuristicSolver(seed=0)
    predicted = {}
    for name, solver in baselines.items():
        solver.fit(task, train)
        predicted[name] = solver.predict(task, examples)
    every_right = [
        all(is_correct(task, example.label, predictions[i]) for predictions in predicted.values())
        for i, example in enumerate(examples)
    ]
    official = BENCHMARKS[task.benchmark].official_count(task.name, "test")
    effect = minimum_detectable_effect(official, DEFAULT_DISCORDANCE) if official else None
    return {
        "split": split.name,
        "n": len(examples),
        "chance_accuracy": None if task.kind == "span" else balanced_expected_accuracy(task, examples),
        "majority": score_task(task, examples, predicted["majority"]).score,
        "heuristic": score_task(task, examples, predicted["heuristic"]).score if "heuristic" in predicted else None,
        "every_baseline_right": 100 * fmean(every_right),
        "official_test_records": official,
        "discordance": DEFAULT_DISCORDANCE,
        "minimum_detectable_effect": None if effect is None else 100 * effect,
    }


def balanced_expected_accuracy(task: Task, examples: Sequence[Example]) -> float:
    """What a uniform guess among each example's own labels expects, x100 (a multiple-choice item
    guesses among its own options)."""
    if task.kind == "multilabel":
        return 100 / 2
    if not task.inline_options or not examples:
        return 100 / len(task.labels)
    return 100 * fmean(1 / len(task.labels_of(e)) for e in examples)


def expected_weighted_random_accuracy(task: Task, train: Sequence[Example], examples: Sequence[Example]) -> float:
    """sum over labels of p_train(label) * p_eval(label): the accuracy that guessing each label
    with its train share expects. Averaged over categories for a multilabel task."""

    def agreement(train_labels: list[Any], eval_labels: list[Any]) -> float:
        p_train, p_eval = Counter(train_labels), Counter(eval_labels)
        return sum(p_train[c] * p_eval[c] for c in p_train) / (len(train_labels) * len(eval_labels))

    train_golds, eval_golds = [e.label for e in train], [e.label for e in examples]
    if task.kind == "multilabel":
        return fmean(
            agreement([g[i] for g in train_golds], [g[i] for g in eval_golds]) for i in range(len(task.categories))
        )
    return agreement(train_golds, eval_golds)


def leakage_summary(results: dict[str, TaskAudit]) -> dict[str, Any] | None:
    """The paper's comparison over the tasks scored by accuracy, each on the split `rueval run`
    scores (test when labelled, else val): mean expected accuracy of guessing by train shares vs.
    of balanced labels, and the majority baseline's mean accuracy."""
    chosen = {}
    for name, result in results.items():
        priors = result.prior_only
        splits = [split for split, prior in priors.items() if "weighted_random_expected_accuracy" in prior]
        if splits and "accuracy" in priors[splits[-1]]["majority"]["metrics"]:
            chosen[name] = splits[-1]  # splits follow the task's order: val, then test
    if not chosen:
        return None
    chosen_priors = [results[name].prior_only[split] for name, split in chosen.items()]
    return {
        "tasks": chosen,
        "weighted_random_expected_accuracy": fmean(p["weighted_random_expected_accuracy"] for p in chosen_priors),
        "balanced_expected_accuracy": fmean(p["balanced_expected_accuracy"] for p in chosen_priors),
        "majority_accuracy": fmean(p["majority"]["metrics"]["accuracy"] for p in chosen_priors),
    }


def artifact_tokens(task: Task, train: Sequence[Example], top: int = TOP_ARTIFACTS) -> dict[str, list[dict[str, Any]]]:
    """Per label (per category for a multilabel task, its positive value), the train lemmas most
    associated with it: chi-squared of lemma presence against label-vs-rest, kept only where the
    lemma is over-represented in the label. ``count``: label examples with the lemma; ``total``:
    all train examples with it. Lemmas of a single example are left out: one example is no pattern."""
    texts = _lemmatised(task, train)
    if not any(texts):
        return {}
    vectorizer = CountVectorizer(analyzer=lambda lemma_list: lemma_list, binary=True)
    presence = vectorizer.fit_transform(texts).tocsc()
    vocabulary = vectorizer.get_feature_names_out()
    totals = np.asarray(presence.sum(axis=0)).ravel()
    if task.kind == "multilabel":
        targets = {c: np.array([g.label[i] == 1 for g in train]) for i, c in enumerate(task.categories)}
    else:
        targets = {str(label): np.array([g.label == label for g in train]) for label in task.labels}
    result: dict[str, list[dict[str, Any]]] = {}
    for name, in_label in targets.items():
        if not in_label.any() or in_label.all():
            result[name] = []  # one-sided split: nothing distinguishes the label
            continue
        scores, _ = chi2(presence, in_label)
        counts = np.asarray(presence[in_label].sum(axis=0)).ravel()
        over = (counts > totals * in_label.mean()) & (totals >= 2)
        ranked = sorted(np.flatnonzero(over), key=lambda j: (-scores[j], -counts[j], vocabulary[j]))[:top]
        result[name] = [
            {"lemma": str(vocabulary[j]), "chi2": float(scores[j]), "count": int(counts[j]), "total": int(totals[j])}
            for j in ranked
        ]
    return result


def _lemmatised(task: Task, examples: Sequence[Example]) -> list[list[str]]:
    """Each example's lemmas, part by part: a passage shared by answers or queries is lemmatised once.
    Words never span two parts (they are joined with a newline), so this equals lemmatising the joined text."""
    parts = [input_parts(task, example) for example in examples]
    found = lemmas_of((part for example_parts in parts for part in example_parts), f"lemmatising {task.name}")
    return [[lemma for part in example_parts for lemma in found[part]] for example_parts in parts]
