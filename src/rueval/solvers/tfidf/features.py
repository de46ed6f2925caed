"""What every TF-IDF model is built from: the papers' settings, the vectorizer, cosines, the classifier."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.dummy import DummyClassifier
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from rueval.core.errors import RuevalError
from rueval.tasks import RSG, TAPE, Task


@dataclass(frozen=True)
class LinearConfig:
    """One baseline's settings."""

    ngram_range: tuple[int, int]
    max_features: int  # the vocabulary: the most frequent n-grams of the train texts
    max_iter: int = 1000  # logistic regression otherwise keeps scikit-learn's defaults (L2, C=1)
    fold_yo: bool = True  # read ё as е (on top of scikit-learn's lower-casing)
    max_negatives: int = 20  # wrong options kept per train example when scoring options (RuCoS, MultiQ)

    def vectorizer(self, analyzer: str = "word") -> TfidfVectorizer:
        preprocessor = _fold_yo if self.fold_yo else None
        return TfidfVectorizer(
            ngram_range=self.ngram_range, max_features=self.max_features, preprocessor=preprocessor, analyzer=analyzer
        )


# By benchmark name: each paper's settings.
CONFIGS = {
    RSG.name: LinearConfig(ngram_range=(1, 1), max_features=10_000),  # Shavrina et al. (2020), Section 4.1.1
    TAPE.name: LinearConfig(ngram_range=(1, 4), max_features=150_000),  # Taktasheva et al. (2022), Section 5.1
}
# The RSG repository's tfidf_baseline scripts: TfidfVectorizer(max_features=10000) as it is (the paper's
# 10,000 words), LogisticRegression() with every default, 100 iterations included.
OFFICIAL_RSG = LinearConfig(ngram_range=(1, 1), max_features=10_000, max_iter=100, fold_yo=False)


def _fold_yo(text: str) -> str:
    return text.lower().replace("ё", "е")


def fit_vectorizer(config: LinearConfig, task: Task, texts: Sequence[str]) -> TfidfVectorizer:
    """The vectorizer of the train texts' words; of their characters where they have no words (MERA's
    BPS: bracket sequences)."""
    for analyzer in ("word", "char"):
        try:
            return config.vectorizer(analyzer).fit(texts)
        except ValueError:  # scikit-learn's "empty vocabulary"
            continue
    raise RuevalError(f"{task.name}: the train texts have no words to build a TF-IDF vocabulary from")


def fit_classifier(config: LinearConfig, seed: int, features: sparse.csr_matrix, targets: Sequence[int]) -> Any:
    """Logistic regression; a constant answer when the train targets have a single class."""
    if len(set(targets)) < 2:
        return DummyClassifier(strategy="most_frequent").fit(features, targets)
    return LogisticRegression(max_iter=config.max_iter, random_state=seed).fit(features, targets)


Column = tuple[sparse.csr_matrix, np.ndarray]  # distinct texts' vectors and each input's row among them


def vectorize(vectorizer: TfidfVectorizer, texts: Sequence[str]) -> Column:
    """The distinct texts' TF-IDF vectors, and each input's row among them: a text is vectorized once."""
    row_of = {text: row for row, text in enumerate(dict.fromkeys(texts))}
    rows = np.fromiter((row_of[text] for text in texts), dtype=np.int64, count=len(texts))
    return vectorizer.transform(list(row_of)), rows


def paired_cosines(a: Column, b: Column) -> np.ndarray:
    """Each input's cosine between its two texts: the dot product, as TF-IDF rows have unit length (or
    none: an empty text's cosine is 0). Only the side with fewer nonzeros is expanded to one row per
    input, the other is looked up, so a long passage is not copied once per option."""
    (small, small_rows), (large, large_rows) = sorted((a, b), key=lambda c: c[0].getnnz(axis=1)[c[1]].sum())
    expanded = small[small_rows].tocoo()
    looked_up = np.asarray(large[large_rows[expanded.row], expanded.col]).ravel()
    return np.bincount(expanded.row, weights=expanded.data * looked_up, minlength=len(small_rows))


Fields = tuple[str, ...]  # the texts one model input is made of, always in the same order


class FieldVectors:
    """Inputs of k texts -> each text's TF-IDF vector side by side, then the cosine similarity of every
    pair of texts (how much premise and hypothesis, or passage and answer, have in common)."""

    def __init__(self, config: LinearConfig):
        self.config = config

    def fit(self, task: Task, inputs: Sequence[Fields]) -> FieldVectors:
        texts = list(dict.fromkeys(text for fields in inputs for text in fields))
        self.vectorizer = fit_vectorizer(self.config, task, texts)
        return self

    def transform(self, inputs: Sequence[Fields], shared: int = 0) -> sparse.csr_matrix:
        """The features of each input. The first ``shared`` texts are the context all options of an
        example share: their own vectors would add the same to every option's score, so only their
        cosines are kept (and a long passage is not copied once per option)."""
        columns = [vectorize(self.vectorizer, [fields[i] for fields in inputs]) for i in range(len(inputs[0]))]
        blocks = [vectors[rows] for vectors, rows in columns[shared:]]
        cosines = [paired_cosines(a, b) for a, b in combinations(columns, 2)]
        if cosines:
            blocks.append(sparse.csr_matrix(np.column_stack(cosines)))
        return sparse.hstack(blocks, format="csr")
