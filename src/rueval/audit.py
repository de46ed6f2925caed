"""Dataset audit: how much of a task can be solved without reading it.

Following Iazykova et al. (2021), Sections 2 and 4: the label distribution of every split and
what predicting from the train label prior alone scores (their "leakage" finding: on the six RSG
accuracy tasks, replicating the train label shares expects 0.538 accuracy where balanced labels
would give 0.472); the lemmas most predictive of each label (their ELI5 look at class-specific
tokens); exact and near duplicates between train and the evaluation splits; and how much the
rule-based heuristics cover.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from statistics import fmean, median
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.feature_selection import chi2
from sklearn.preprocessing import normalize

from rueval import __version__
from rueval.data import DataSource, Split, load_train, open_data
from rueval.metrics import normalize_answer, score_task
from rueval.progress import progress, step
from rueval.results import AuditResult, Coverage, TaskAudit
from rueval.solvers.heuristics import RULES, coverage
from rueval.solvers.trivial import TrivialSolver
from rueval.tasks import Example, Task
from rueval.text import lemmas_of, words

NEAR_DUPLICATE_THRESHOLD = 0.9  # cosine similarity of TF-IDF character n-grams
TOP_ARTIFACTS = 10
SUFFIX_SHARE = 0.95  # similar_pairs: of the threshold, the norm of the common end its bound leaves out (see there)
QUERY_CHUNK = 1024  # similar_pairs: queries bounded at once, bounding memory
PAIR_CHUNK = 16384  # similar_pairs: pairs scored at once, bounding memory
SEARCH_CHUNK = 4096  # train texts vectorised and searched at once, bounding memory


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
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
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
    if train is not None:
        with step(f"{task.name}: duplicates of {len(train.examples):,} train examples in {len(item.evals)} split(s)"):
            result.duplicates = duplicates(train, item.evals)
        if train.labelled:
            result.prior_only = {s.name: prior_only(task, train.examples, s.examples) for s in labelled_evals}
            if task.kind != "span":
                with step(f"{task.name}: artifact tokens, lemmatising {len(train.examples):,} train examples"):
                    result.artifacts = artifact_tokens(task, train.examples)
    if task.name in RULES:
        for split in labelled:  # the last row of each: no rule fires
            with step(f"{task.name}: rule coverage of {len(split.examples):,} {split.name} examples"):
                result.heuristics[split.name] = Coverage(len(split.examples), coverage(task, split.examples))
    return result


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
    return _shares(Counter(golds), task.labels)


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
        result["balanced_expected_accuracy"] = 100 / (2 if task.kind == "multilabel" else len(task.labels))
    return result


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
    priors = [results[name].prior_only[split] for name, split in chosen.items()]
    return {
        "tasks": chosen,
        "weighted_random_expected_accuracy": fmean(p["weighted_random_expected_accuracy"] for p in priors),
        "balanced_expected_accuracy": fmean(p["balanced_expected_accuracy"] for p in priors),
        "majority_accuracy": fmean(p["majority"]["metrics"]["accuracy"] for p in priors),
    }


def input_parts(task: Task, example: Example) -> list[str]:
    """The example's input texts: what a model reads (labels and metadata left out)."""
    parts = []
    for path in task.text_fields:
        value = example.value(path)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):  # Winograd's options
            parts.extend(v for v in value if isinstance(v, str))
    return parts


def input_text(task: Task, example: Example) -> str:
    """The example's input texts joined."""
    return "\n".join(input_parts(task, example))


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
    result = {}
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


def duplicates(train: Split, evals: Sequence[Split]) -> dict[str, dict[str, Any]]:
    """Per evaluation split, the train/eval pairs whose input texts are identical after
    normalisation (exact) or, otherwise, have a cosine similarity of TF-IDF character n-grams of
    at least NEAR_DUPLICATE_THRESHOLD (near)."""
    train_rows = _rows_by_text(train)
    eval_rows = [_rows_by_text(split) for split in evals]
    eval_texts = list(dict.fromkeys(text for rows in eval_rows for text in rows))
    similar = near_texts(list(train_rows), eval_texts, f"near duplicates of {train.task.name}")

    def compare(split: Split, rows: dict[str, list[int]]) -> dict[str, Any]:
        exact = [(i, j, 1.0) for text, js in rows.items() for j in js for i in train_rows.get(text, ())]
        near = [
            (i, j, similarity)
            for eval_text, js in rows.items()
            for train_text, similarity in similar.get(eval_text, ())
            for j in js
            for i in train_rows[train_text]
        ]
        near.sort(key=lambda pair: (-pair[2], pair[1], pair[0]))

        def listed(pairs: list[tuple[int, int, float]]) -> list[dict[str, Any]]:
            return [
                {"train": train.examples[i].idx, "eval": split.examples[j].idx, "similarity": round(similarity, 4)}
                for i, j, similarity in pairs
            ]

        return {
            "n": len(split.examples),
            "exact": len(exact),
            "near": len(near),
            "eval_with_exact": len({j for _, j, _ in exact}),
            "eval_with_near": len({j for _, j, _ in near}),
            "exact_pairs": listed(exact),
            "near_pairs": listed(near),
        }

    return {split.name: compare(split, rows) for split, rows in zip(evals, eval_rows, strict=True)}


def near_texts(train_texts: list[str], eval_texts: list[str], label: str) -> dict[str, list[tuple[str, float]]]:
    """Per evaluation text, the other train texts at a cosine of at least NEAR_DUPLICATE_THRESHOLD.
    One vocabulary is fitted on all the distinct texts; every evaluation text (of all the splits at
    once) is searched against train in chunks, so memory stays bounded."""
    distinct = list(dict.fromkeys([*train_texts, *eval_texts]))
    found: dict[str, list[tuple[str, float]]] = defaultdict(list)
    if not any(distinct):
        return found
    position = {text: k for k, text in enumerate(distinct)}
    vectors = CharNgramVectors(distinct)
    queries = vectors.rows([position[text] for text in eval_texts])
    train_positions = [position[text] for text in train_texts]
    for start in progress(range(0, len(train_texts), SEARCH_CHUNK), label):
        index = vectors.rows(train_positions[start : start + SEARCH_CHUNK])
        for k, t, similarity in zip(
            *similar_pairs(queries, index, NEAR_DUPLICATE_THRESHOLD, rare_first=True), strict=True
        ):
            eval_text, train_text = eval_texts[k], train_texts[start + t]
            if eval_text != train_text:  # identical texts are the exact duplicates
                found[eval_text].append((train_text, float(similarity)))
    return found


def _rows_by_text(split: Split) -> dict[str, list[int]]:
    """Example positions by normalised input text. Parts are normalised once each (a MuSeRC
    passage serves every answer); normalising the joined text gives the same, as parts are
    joined with whitespace and normalisation collapses whitespace."""
    normalised: dict[str, str] = {}
    rows: dict[str, list[int]] = defaultdict(list)
    examples = split.examples
    for i, example in enumerate(progress(examples, f"normalising {split.task.name}/{split.name}", total=len(examples))):
        parts = []
        for part in input_parts(split.task, example):
            if part not in normalised:
                normalised[part] = normalize_answer(part)
            if normalised[part]:
                parts.append(normalised[part])
        rows[" ".join(parts)].append(i)
    return rows


class CharNgramVectors:
    """TF-IDF vectors of character 3- to 5-grams within words (scikit-learn's char_wb analyser,
    smooth idf, l2 norm) of many texts, built on demand for a few rows at a time. char_wb cuts
    n-grams from each whitespace-separated word alone, so a text's n-gram counts are its word
    counts times each word's n-gram counts: each distinct word is analysed once."""

    def __init__(self, texts: Sequence[str]) -> None:
        words = CountVectorizer(analyzer=str.split, dtype=np.float32)
        self.word_counts = words.fit_transform(texts).tocsr()
        char_ngrams = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5)).build_analyzer()
        ngrams = CountVectorizer(analyzer=char_ngrams, dtype=np.float32)
        self.word_ngrams = ngrams.fit_transform(words.get_feature_names_out()).tocsr()
        document_frequency = np.zeros(self.word_ngrams.shape[1])
        for start in range(0, len(texts), SEARCH_CHUNK):
            counts = self.word_counts[start : start + SEARCH_CHUNK] @ self.word_ngrams
            document_frequency += np.bincount(counts.indices, minlength=len(document_frequency))
        rare_first = np.argsort(document_frequency, kind="stable")  # the order similar_pairs prunes best in
        self.word_ngrams = self.word_ngrams[:, rare_first].tocsr()
        self.idf = (np.log((1 + len(texts)) / (1 + document_frequency[rare_first])) + 1).astype(np.float32)

    def rows(self, positions: Sequence[int]) -> sparse.csr_matrix:
        """The l2-normalised TF-IDF rows of the texts at these positions, n-grams from rare to common."""
        counts = (self.word_counts[positions] @ self.word_ngrams).tocsr()
        counts.sort_indices()  # once here, not in every search the rows take part in
        counts.data *= self.idf[counts.indices]
        return normalize(counts)


def similar_pairs(
    queries: sparse.csr_matrix, index: sparse.csr_matrix, threshold: float, rare_first: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (query row, index row, cosine) with cosine >= threshold, for L2-normalised non-negative
    rows (TF-IDF), without scoring every pair (all-pairs similarity search with prefix filtering,
    after Bayardo et al. 2007, "Scaling up all pairs similarity search").

    Order features from rare to common (by document frequency in the two matrices, unless
    ``rare_first`` says the columns already are; any order is exact, rare-first prunes most). Cut
    each row's common end while its norm stays below s = SUFFIX_SHARE * threshold; the rest is the
    row's prefix. For rows x, y with x's cut no later than y's, x's prefix lies within y's, so
    x.y = (x's prefix).(y's prefix) + (x's common end).y < prefix product + s (Cauchy-Schwarz, y of
    norm 1). One sparse product of the prefixes bounds every pair; only pairs whose bound reaches
    the threshold are scored.
    """
    if not rare_first:
        document_frequency = np.asarray((queries > 0).sum(axis=0) + (index > 0).sum(axis=0)).ravel()
        order = np.argsort(document_frequency, kind="stable")
        queries, index = queries[:, order].tocsr(), index[:, order].tocsr()
    suffix_norm = SUFFIX_SHARE * threshold
    index_prefixes = _prefixes(index, suffix_norm).T.tocsr()
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(np.empty(0, int), np.empty(0, int), np.empty(0))]
    for start in range(0, queries.shape[0], QUERY_CHUNK):
        block = queries[start : start + QUERY_CHUNK]
        bounds = (_prefixes(block, suffix_norm) @ index_prefixes).tocoo()
        keep = np.flatnonzero(bounds.data >= threshold - suffix_norm - 1e-4)  # less a margin for float32
        for first in range(0, len(keep), PAIR_CHUNK):
            rows, columns = bounds.row[keep[first : first + PAIR_CHUNK]], bounds.col[keep[first : first + PAIR_CHUNK]]
            similarity = np.asarray(block[rows].multiply(index[columns]).sum(axis=1)).ravel()
            hits = similarity >= threshold - 1e-6  # float32 rounding of an exact threshold value
            found.append((rows[hits] + start, columns[hits], similarity[hits]))
    rows_, columns_, similarities = (np.concatenate(parts) for parts in zip(*found, strict=True))
    return rows_, columns_, np.minimum(similarities, 1.0)


def _prefixes(matrix: sparse.csr_matrix, suffix_norm: float) -> sparse.csr_matrix:
    """Each row without its common end (columns rare first): its last features whose squared
    weights sum below suffix_norm^2 (less a margin for float32)."""
    matrix = matrix.copy()
    if not matrix.nnz:
        return matrix
    matrix.sort_indices()
    cumulative = np.cumsum(matrix.data.astype(np.float64) ** 2)
    row_end = cumulative[np.maximum(matrix.indptr[1:] - 1, 0)]
    counts = np.diff(matrix.indptr)
    from_here_to_row_end = np.repeat(row_end, counts) - cumulative + matrix.data.astype(np.float64) ** 2
    matrix.data[from_here_to_row_end < suffix_norm**2 - 1e-4] = 0
    matrix.eliminate_zeros()
    return matrix
