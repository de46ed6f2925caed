"""Train/evaluation duplicates, exact and near, for the dataset audit (rueval.audit.dataset_audit): input texts
equal after normalisation, or with a cosine similarity of TF-IDF character n-grams of at least
NEAR_DUPLICATE_THRESHOLD, found by an exact all-pairs search that never scores every pair."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.preprocessing import normalize

from rueval.core.progress import progress
from rueval.data import Split
from rueval.scoring.metrics import normalize_answer
from rueval.tasks import Example, Task

NEAR_DUPLICATE_THRESHOLD = 0.9  # cosine similarity of TF-IDF character n-grams
SUFFIX_SHARE = 0.95  # similar_pairs: of the threshold, the norm of the common end its bound leaves out (see there)
QUERY_CHUNK = 1024  # similar_pairs: queries bounded at once, bounding memory
PAIR_CHUNK = 16384  # similar_pairs: pairs scored at once, bounding memory
SEARCH_CHUNK = 4096  # train texts vectorised and searched at once, bounding memory


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


@dataclass(frozen=True)
class SplitInputs:
    """A split as the duplicate search reads it: each example's input texts, and its idx."""

    name: str
    label: str  # task/split, for progress lines
    parts: list[list[str]]
    ids: list[Any]

    @classmethod
    def of(cls, split: Split) -> SplitInputs:
        task = split.task
        assert isinstance(task, Task)  # the audit reads tasks' splits
        parts = [input_parts(task, example) for example in split.examples]
        return cls(split.name, f"{split.task.name}/{split.name}", parts, [example.idx for example in split.examples])


def duplicates(train: Split, evals: Sequence[Split]) -> dict[str, dict[str, Any]]:
    """Per evaluation split, the train/eval pairs whose input texts are identical after
    normalisation (exact) or, otherwise, have a cosine similarity of TF-IDF character n-grams of
    at least NEAR_DUPLICATE_THRESHOLD (near)."""
    return duplicate_pairs(SplitInputs.of(train), [SplitInputs.of(split) for split in evals])


def duplicate_pairs(train: SplitInputs, evals: Sequence[SplitInputs]) -> dict[str, dict[str, Any]]:
    """duplicates() of the splits' input texts (what a search in another process is sent)."""
    train_rows = _rows_by_text(train)
    eval_rows = [_rows_by_text(split) for split in evals]
    eval_texts = list(dict.fromkeys(text for rows in eval_rows for text in rows))
    similar = near_texts(list(train_rows), eval_texts, f"near duplicates of {train.label}")

    def compare(split: SplitInputs, rows: dict[str, list[int]]) -> dict[str, Any]:
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
                {"train": train.ids[i], "eval": split.ids[j], "similarity": round(similarity, 4)}
                for i, j, similarity in pairs
            ]

        return {
            "n": len(split.ids),
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


def _rows_by_text(split: SplitInputs) -> dict[str, list[int]]:
    """Example positions by normalised input text. Parts are normalised once each (a MuSeRC
    passage serves every answer); normalising the joined text gives the same, as parts are
    joined with whitespace and normalisation collapses whitespace."""
    normalised: dict[str, str] = {}
    rows: dict[str, list[int]] = defaultdict(list)
    for i, parts in enumerate(progress(split.parts, f"normalising {split.label}", total=len(split.parts))):
        found = []
        for part in parts:
            if part not in normalised:
                normalised[part] = normalize_answer(part)
            if normalised[part]:
                found.append(normalised[part])
        rows[" ".join(found)].append(i)
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
