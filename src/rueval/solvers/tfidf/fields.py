"""rueval's own TF-IDF models: the TAPE linear baseline, and for RSG tasks `-m tfidf-fields`.

TAPE (Taktasheva et al., 2022, Section 5.1, Table 3 "Linear") gives its settings, TF-IDF over word
1-4-grams, the top 150,000 features, logistic regression, but not how each task's fields become one
input; these models decide that. `-m tfidf-fields` reads RSG tasks the same way, with the RSG paper's
10,000-word vocabulary: rueval's own richer variant of the official construction (``official.py``),
not the paper's baseline and never the default.

Classification tasks read a few fields, multiple-choice and span tasks score each option with a
binary classifier and pick the best, Ethics trains one classifier per category, CheGeKa answers like
its nearest train question. An input of several fields is featurised by ``FieldVectors``: each
field's TF-IDF vector side by side, plus the cosine similarity of every pair of fields. Without those
similarities a linear model could not relate an option to its context: the context's own vector adds
the same amount to every option's score, so for options it is left out and only its cosines are kept.
Text is lower-cased with ё read as е.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import razdel
from scipy import sparse

from rueval.errors import RuevalError
from rueval.progress import progress
from rueval.scoring import is_correct
from rueval.solvers.tfidf.features import CONFIGS, Fields, FieldVectors, LinearConfig, fit_classifier
from rueval.tasks import Example, Task, split_options
from rueval.text import sentences

PREDICT_BATCH = 256  # examples whose options are featurised at once

Option = tuple[Any, Fields, Fields]  # an answer, the texts all options of its example share, its own texts


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
    return lambda answer: is_correct(task, example.label, answer)  # as the metrics compare answers


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
        self.classifier = fit_classifier(self.config, self.seed, self.features.transform(inputs), targets)

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
        self.classifier = fit_classifier(self.config, self.seed, features, targets)

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
            fit_classifier(self.config, self.seed, matrix, [example.label[i] for example in train])
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


def fields_model(task: Task, seed: int) -> Model:
    """The task's model, with the settings of the task's paper."""
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
