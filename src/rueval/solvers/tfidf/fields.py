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
from functools import partial
from typing import Any

import numpy as np
import razdel
from scipy import sparse

from rueval.core.errors import RuevalError
from rueval.core.progress import progress
from rueval.core.text import sentences
from rueval.scoring.task_scores import is_correct
from rueval.solvers.tfidf.features import CONFIGS, Fields, FieldVectors, LinearConfig, fit_classifier
from rueval.tasks import TAPE, Example, Task, split_options
from rueval.tasks.shapes import Answer, Choice, Cloze, Coreference, InlineChoice, MultiLabel

PREDICT_BATCH = 256  # examples whose options are featurised at once

Option = tuple[Any, Fields, Fields]  # an answer, the texts all options of its example share, its own texts


# ---- reading examples -------------------------------------------------------------------------------


def _choice_options(shape: Choice, task: Task, example: Example) -> list[Option]:
    """PARus: the context (premise, cause/effect) and each option; label 0 is the first."""
    context = tuple(map(example.text, (*shape.context, *([shape.question] if shape.question else []))))
    return [(label, context, (example.text(option),)) for label, option in enumerate(shape.options)]


def _lettered_options(shape: InlineChoice, task: Task, example: Example) -> list[Option]:
    """RuOpenBookQA / RuWorldTree: the question's stem with each of its inline options."""
    stem, options = split_options(example.text(shape.question), where=f"{task.name} example {example.key}")
    return [(letter, (stem,), (text,)) for letter, text in options.items()]


def _entity_options(task: Task, example: Example) -> list[Option]:
    """RuCoS: each distinct entity of the passage put in the query's @placeholder, against the passage."""
    passage, query = example.text("passage"), example.text("query")
    entities = dict.fromkeys(example.candidates)  # mentions repeat
    return [(entity, (passage,), (query.replace("@placeholder", entity),)) for entity in entities]


def _span_options(span_of: str, shape: Answer, task: Task, example: Example) -> list[Option]:
    """MultiQ: every run of 1-3 adjacent words of the main text, with its sentence and the question."""
    question = example.text(shape.question)
    options: dict[str, Fields] = {}
    for sentence in sentences(example.text(span_of)):
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
            right: list[Fields] = []
            wrong: list[Fields] = []
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

    def __init__(self, text: str, config: LinearConfig, seed: int):
        self.text, self.config, self.seed = text, config, seed

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        described = progress(train, f"tfidf features for {task.name}")
        inputs = [(example.text(self.text),) for example in described]
        self.features = FieldVectors(self.config).fit(task, inputs)
        matrix = self.features.transform(inputs)
        self.classifiers = [
            fit_classifier(self.config, self.seed, matrix, [example.label[i] for example in train])
            for i in range(len(task.categories))
        ]

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        matrix = self.features.transform([(example.text(self.text),) for example in examples])
        columns = [classifier.predict(matrix) for classifier in self.classifiers]
        return [tuple(int(column[row]) for column in columns) for row in range(len(examples))]


class NearestAnswerModel:
    """CheGeKa (open answers, no candidates): the answer of the train question closest by TF-IDF cosine."""

    def __init__(self, question: str, config: LinearConfig):
        self.question, self.config = question, config

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        described = progress(train, f"tfidf features for {task.name}")
        inputs = [(example.text(self.question),) for example in described]
        self.features = FieldVectors(self.config).fit(task, inputs)
        self.questions = self.features.transform(inputs)
        self.answers = [example.label[0] for example in train]

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        queries = self.features.transform([(example.text(self.question),) for example in examples])
        nearest = np.asarray((queries @ self.questions.T).argmax(axis=1)).ravel()  # rows are unit length
        return [self.answers[row] for row in nearest]


Model = LabelModel | OptionModel | CategoryModel | NearestAnswerModel


def label_fields(task: Task) -> tuple[str, ...]:
    """A classification task's texts: premise and hypothesis; a Winograd example reads its text, the
    pronoun and the candidate (not the list of every candidate)."""
    if isinstance(task.shape, Coreference):
        return (task.shape.text, task.shape.pronoun, task.shape.candidate)
    return task.text_fields


def fields_model(task: Task, seed: int) -> Model:
    """The task's model, by its shape, with the settings of the task's paper (TAPE's for a task of
    one's own). Classification tasks read their texts; choice tasks score each option with a binary
    classifier and pick the best: PARus' choices (with the premise and cause/effect), the inline options
    (A), (B), ... (with the stem), RuCoS' entities in the query (against the passage), MultiQ's 1-3-word spans
    of the main text (with their sentence and the question)."""
    config = CONFIGS.get(task.benchmark, CONFIGS[TAPE.name])
    match task.shape:
        case Choice() as shape:
            return OptionModel(partial(_choice_options, shape), config, seed)
        case InlineChoice() as shape:
            return OptionModel(partial(_lettered_options, shape), config, seed)
        case Cloze():
            return OptionModel(_entity_options, config, seed)
        case Answer(span_of=str() as span_of) as shape:
            return OptionModel(partial(_span_options, span_of, shape), config, seed)
        case Answer() as shape:
            return NearestAnswerModel(shape.question, config)
        case MultiLabel() as shape:
            return CategoryModel(shape.text, config, seed)
    if task.kind == "classification":
        return LabelModel(label_fields(task), config, seed)
    raise RuevalError(f"the tfidf baseline does not know how to read task '{task.name}'")
