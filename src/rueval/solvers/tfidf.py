"""The linear baselines of both papers: TF-IDF features and logistic regression, with scikit-learn.

- RSG (Shavrina et al., 2020, Section 4.1.1): a TF-IDF vocabulary of the 10,000 most common words,
  then one logistic regression per task. The paper fitted TF-IDF on a 20k-document Wikipedia sample,
  which cannot be downloaded here: the vectorizer is fitted on the task's own train texts instead.
- TAPE (Taktasheva et al., 2022, Section 5.1, Table 3 "Linear"): TF-IDF over word 1-4-grams, the
  top 150,000 features, logistic regression with scikit-learn's default L2 regularisation.

The configuration follows ``task.benchmark``. Tokens are scikit-learn's default word pattern (the
papers used scikit-learn and name no other tokenizer; it is also some 35 times faster than razdel),
on lower-cased text with ё read as е.

How each task becomes features is decided in one place, ``_model_for``: classification tasks read a
few fields, multiple-choice and span tasks score each option with a binary classifier and pick the
best, Ethics trains one classifier per category, CheGeKa answers like its nearest train question.
An input of several fields is featurised by ``FieldVectors``: each field's TF-IDF vector side by
side, plus the cosine similarity of every pair of fields. Without those similarities a linear model
could not relate an option to its context: the context's own vector adds the same amount to every
option's score, so for options it is left out and only its cosines are kept.

Fitted models are cached on disk (``cache_dir("tfidf")``), keyed by the train examples' content,
the parameters and the library versions, so a second run on the same data skips fitting.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import joblib
import numpy as np
import razdel
import sklearn
from scipy import sparse
from sklearn.dummy import DummyClassifier
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from rueval import __version__
from rueval.errors import RuevalError
from rueval.files import atomic_path
from rueval.metrics import normalize_answer
from rueval.paths import cache_dir
from rueval.progress import progress
from rueval.solvers.base import Solver
from rueval.tasks import Example, Task, split_options
from rueval.text import sentences


@dataclass(frozen=True)
class LinearConfig:
    """One paper's baseline settings."""

    ngram_range: tuple[int, int]
    max_features: int  # the vocabulary: the most frequent n-grams of the train texts
    max_iter: int = 1000  # logistic regression otherwise keeps scikit-learn's defaults (L2, C=1)
    max_negatives: int = 20  # wrong options kept per train example when scoring options (RuCoS, MultiQ)

    def vectorizer(self) -> TfidfVectorizer:
        return TfidfVectorizer(ngram_range=self.ngram_range, max_features=self.max_features, preprocessor=_normalize)


CONFIGS = {
    "rsg": LinearConfig(ngram_range=(1, 1), max_features=10_000),  # Shavrina et al. (2020), Section 4.1.1
    "tape": LinearConfig(ngram_range=(1, 4), max_features=150_000),  # Taktasheva et al. (2022), Section 5.1
}


def _normalize(text: str) -> str:
    return text.lower().replace("ё", "е")


PREDICT_BATCH = 256  # examples whose options are featurised at once

Fields = tuple[str, ...]  # the texts one model input is made of, always in the same order
Option = tuple[Any, Fields, Fields]  # an answer, the texts all options of its example share, its own texts


class FieldVectors:
    """Inputs of k texts -> each text's TF-IDF vector side by side, then the cosine similarity of every
    pair of texts (how much premise and hypothesis, or passage and answer, have in common)."""

    def __init__(self, config: LinearConfig):
        self.vectorizer = config.vectorizer()

    def fit(self, task: Task, inputs: Sequence[Fields]) -> FieldVectors:
        try:
            self.vectorizer.fit(list(dict.fromkeys(text for fields in inputs for text in fields)))
        except ValueError:  # scikit-learn's "empty vocabulary"
            raise RuevalError(f"{task.name}: the train texts have no words to build a TF-IDF vocabulary from") from None
        return self

    def transform(self, inputs: Sequence[Fields], shared: int = 0) -> sparse.csr_matrix:
        """The features of each input. The first ``shared`` texts are the context all options of an
        example share: their own vectors would add the same to every option's score, so only their
        cosines are kept (and a long passage is not copied once per option)."""
        columns = [self._vectorize([fields[i] for fields in inputs]) for i in range(len(inputs[0]))]
        blocks = [vectors[rows] for vectors, rows in columns[shared:]]
        cosines = [_paired_cosines(a, b) for a, b in combinations(columns, 2)]
        if cosines:
            blocks.append(sparse.csr_matrix(np.column_stack(cosines)))
        return sparse.hstack(blocks, format="csr")

    def _vectorize(self, texts: list[str]) -> tuple[sparse.csr_matrix, np.ndarray]:
        """The distinct texts' TF-IDF vectors, and each input's row among them: a text is vectorized once."""
        row_of = {text: row for row, text in enumerate(dict.fromkeys(texts))}
        rows = np.fromiter((row_of[text] for text in texts), dtype=np.int64, count=len(texts))
        return self.vectorizer.transform(list(row_of)), rows


Column = tuple[sparse.csr_matrix, np.ndarray]  # distinct vectors and each input's row among them


def _paired_cosines(a: Column, b: Column) -> np.ndarray:
    """Each input's cosine between two of its texts: the dot product, as TF-IDF rows have unit length.
    Only the side with fewer nonzeros is expanded to one row per input, the other is looked up."""
    (small, small_rows), (large, large_rows) = sorted((a, b), key=lambda c: c[0].getnnz(axis=1)[c[1]].sum())
    expanded = small[small_rows].tocoo()
    looked_up = np.asarray(large[large_rows[expanded.row], expanded.col]).ravel()
    return np.bincount(expanded.row, weights=expanded.data * looked_up, minlength=len(small_rows))


def _classifier(config: LinearConfig, seed: int, features: sparse.csr_matrix, targets: Sequence[int]) -> Any:
    """Logistic regression; a constant answer when the train targets have a single class."""
    if len(set(targets)) < 2:
        return DummyClassifier(strategy="most_frequent").fit(features, targets)
    return LogisticRegression(max_iter=config.max_iter, random_state=seed).fit(features, targets)


# ---- reading examples -------------------------------------------------------------------------------


def _parus_options(task: Task, example: Example) -> list[Option]:
    """PARus: premise, cause/effect and each choice; label 0 is choice1."""
    premise, question = example.text("premise"), example.text("question")
    return [(label, (premise, question), (example.text(f"choice{label + 1}"),)) for label in task.labels]


def _lettered_options(task: Task, example: Example) -> list[Option]:
    """RuOpenBookQA / RuWorldTree: the question's stem with each inline option (A)-(D)."""
    stem, options = split_options(example.text("question"), where=f"{task.name} example {example.key}")
    return [(letter, (stem,), (text,)) for letter, text in options.items()]


def _entity_options(task: Task, example: Example) -> list[Option]:
    """RuCoS: each distinct entity of the passage put in the query's @placeholder, against the passage."""
    passage, query = example.text("passage"), example.text("query")
    entities = dict.fromkeys(example.candidates)  # mentions repeat
    return [(entity, (passage,), (query.replace("@placeholder", entity),)) for entity in entities]


def _span_options(task: Task, example: Example) -> list[Option]:
    """MultiQ: every run of 1-3 adjacent words of the main text, with its sentence and the question."""
    question = example.text("question")
    options: dict[str, Fields] = {}
    for sentence in sentences(example.text("main_text")):
        for run in _word_runs(sentence):
            for n in (1, 2, 3):
                for first, last in zip(run, run[n - 1 :]):
                    span = sentence[first.start : last.stop]
                    options.setdefault(span, (sentence, span))
    return [(span, (question,), own) for span, own in options.items()]


def _word_runs(text: str) -> list[list[Any]]:
    """razdel tokens grouped into runs of words; punctuation ends a run, so spans never straddle it."""
    runs: list[list[Any]] = [[]]
    for token in razdel.tokenize(text):
        if any(ch.isalnum() for ch in token.text):
            runs[-1].append(token)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def _gold_test(task: Task, example: Example) -> Callable[[Any], bool]:
    """Whether an option is a right answer to the example."""
    if task.kind == "span":  # answers are compared as the metrics compare them
        golds = {normalize_answer(gold) for gold in example.label}
        return lambda answer: normalize_answer(answer) in golds
    return lambda answer: answer == example.label


# ---- the models --------------------------------------------------------------------------------------


class LabelModel:
    """Classification: the texts of a few fields -> one of the task's labels."""

    def __init__(self, paths: tuple[str, ...], config: LinearConfig, seed: int):
        self.paths, self.config, self.seed = paths, config, seed

    def read(self, task: Task, example: Example) -> Fields:
        return tuple(example.text(path) for path in self.paths)

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        inputs = [self.read(task, example) for example in progress(train, f"tfidf features for {task.name}")]
        self.features = FieldVectors(self.config).fit(task, inputs)
        targets = [task.labels.index(example.label) for example in train]
        self.classifier = _classifier(self.config, self.seed, self.features.transform(inputs), targets)

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        rows = self.classifier.predict(self.features.transform([self.read(task, example) for example in examples]))
        return [task.labels[row] for row in rows]


class OptionModel:
    """Multiple choice and span picking: a binary classifier scores each option, the best one wins.
    An option's input is its example's shared context followed by its own texts."""

    def __init__(self, options: Callable[[Task, Example], list[Option]], config: LinearConfig, seed: int):
        self.options, self.config, self.seed = options, config, seed

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        rng = random.Random(f"{self.seed}/{task.name}")
        inputs: list[Fields] = []
        targets: list[int] = []
        for example in progress(train, f"tfidf features for {task.name}"):
            is_gold = _gold_test(task, example)
            right, wrong = [], []
            for answer, context, own in self.options(task, example):
                self.shared = len(context)
                (right if is_gold(answer) else wrong).append(context + own)
            if len(wrong) > self.config.max_negatives:  # MultiQ has hundreds of spans per question
                wrong = rng.sample(wrong, self.config.max_negatives)
            inputs += right + wrong
            targets += [1] * len(right) + [0] * len(wrong)
        if not inputs:
            raise RuevalError(f"{task.name}: the train examples have no answer options to learn from")
        self.features = FieldVectors(self.config).fit(task, inputs)
        features = self.features.transform(inputs, self.shared)
        self.classifier = _classifier(self.config, self.seed, features, targets)

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        # In batches: MultiQ's hundreds of spans per question would otherwise fill gigabytes.
        batches = (examples[start : start + PREDICT_BATCH] for start in range(0, len(examples), PREDICT_BATCH))
        return [answer for batch in batches for answer in self._predict_batch(task, batch)]

    def _predict_batch(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        per_example = [self.options(task, example) for example in examples]
        for example, options in zip(examples, per_example, strict=True):
            if not options:
                raise RuevalError(f"{task.name} example {example.key}: no answer options to choose from")
        inputs = [context + own for options in per_example for _, context, own in options]
        scores = self._positive_scores(self.features.transform(inputs, self.shared))
        predictions, start = [], 0
        for options in per_example:
            best = int(np.argmax(scores[start : start + len(options)]))  # ties: the first option
            predictions.append(options[best][0])
            start += len(options)
        return predictions

    def _positive_scores(self, features: sparse.csr_matrix) -> np.ndarray:
        classes = list(self.classifier.classes_)
        if 1 not in classes:
            return np.zeros(features.shape[0])
        return self.classifier.predict_proba(features)[:, classes.index(1)]


class CategoryModel:
    """Ethics: one binary classifier per category on the text, as TAPE trains them."""

    def __init__(self, config: LinearConfig, seed: int):
        self.config, self.seed = config, seed

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        inputs = [(example.text("text"),) for example in progress(train, f"tfidf features for {task.name}")]
        self.features = FieldVectors(self.config).fit(task, inputs)
        matrix = self.features.transform(inputs)
        self.classifiers = [
            _classifier(self.config, self.seed, matrix, [example.label[i] for example in train])
            for i in range(len(task.categories))
        ]

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        matrix = self.features.transform([(example.text("text"),) for example in examples])
        columns = [classifier.predict(matrix) for classifier in self.classifiers]
        return [tuple(int(column[row]) for column in columns) for row in range(len(examples))]


class NearestAnswerModel:
    """CheGeKa (open answers, no candidates): the answer of the train question closest by TF-IDF cosine."""

    def __init__(self, config: LinearConfig):
        self.config = config

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        inputs = [(example.text("question"),) for example in progress(train, f"tfidf features for {task.name}")]
        self.features = FieldVectors(self.config).fit(task, inputs)
        self.questions = self.features.transform(inputs)
        self.answers = [example.label[0] for example in train]

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        queries = self.features.transform([(example.text("question"),) for example in examples])
        nearest = np.asarray((queries @ self.questions.T).argmax(axis=1)).ravel()  # rows are unit length
        return [self.answers[row] for row in nearest]


Model = LabelModel | OptionModel | CategoryModel | NearestAnswerModel

# Classification tasks: the fields the classifier reads, each a vector, plus their pairwise cosines.
LABEL_FIELDS = {
    "lidirus": ("sentence1", "sentence2"),  # fitted on TERRa's train split, renamed by load_train
    "rcb": ("premise", "hypothesis"),
    "terra": ("premise", "hypothesis"),
    "russe": ("word", "sentence1", "sentence2"),
    "rwsd": ("text", "target.span1_text", "target.span2_text"),  # does span 2 refer to span 1?
    "danetqa": ("question", "passage"),
    "muserc": ("passage", "question", "answer"),  # one example per answer option, labelled 0/1
    "winograd": ("text", "reference", "answer"),  # does the reference point to the answer?
}
# Choice tasks: the options each example offers, each scored by a binary classifier; the best wins.
OPTIONS = {
    "parus": _parus_options,  # premise + cause/effect, each choice
    "ru_openbook": _lettered_options,  # stem, each inline option (A)-(D)
    "ru_worldtree": _lettered_options,
    "rucos": _entity_options,  # passage, the query with each entity in its @placeholder
    "multiq": _span_options,  # question, each 1-3-word span of the main text with its sentence
}


def _model_for(task: Task, seed: int) -> Model:
    config = CONFIGS[task.benchmark]
    if task.name in LABEL_FIELDS:
        return LabelModel(LABEL_FIELDS[task.name], config, seed)
    if task.name in OPTIONS:
        return OptionModel(OPTIONS[task.name], config, seed)
    if task.kind == "multilabel":
        return CategoryModel(config, seed)
    if task.name == "chegeka":
        return NearestAnswerModel(config)
    raise RuevalError(f"the tfidf baseline does not know how to read task '{task.name}'")


class TfidfSolver(Solver):
    """`-m tfidf`: the RSG or TAPE linear baseline, chosen by the task's benchmark."""

    name = "tfidf"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        labelled = [example for example in train if example.label is not None]
        if not labelled:
            raise RuevalError(f"{task.name}: the tfidf baseline needs labelled train examples, and the data has none")
        path = cache_dir("tfidf") / f"{task.name}-{self._cache_key(task, labelled)}.joblib"
        if path.exists():
            self._model = joblib.load(path)
            return
        self._model = _model_for(task, self.seed)
        self._model.fit(task, labelled)
        with atomic_path(path) as tmp:
            joblib.dump(self._model, tmp)

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        examples = list(examples)
        return self._model.predict(task, examples) if examples else []

    def _cache_key(self, task: Task, train: Sequence[Example]) -> str:
        """A hash of what the fitted model depends on: the train data, the parameters, the code versions."""
        settings = {
            "task": task.name,
            "config": asdict(CONFIGS[task.benchmark]),
            "seed": self.seed,
            "versions": {"rueval": __version__, "scikit-learn": sklearn.__version__},
        }
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
        for example in train:
            content = [example.fields, example.label, example.candidates]
            digest.update(json.dumps(content, sort_keys=True, ensure_ascii=False, default=str).encode() + b"\n")
        return digest.hexdigest()[:32]
