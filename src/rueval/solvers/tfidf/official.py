"""The RSG TF-IDF baseline as the RussianSuperGLUE repository's scripts build it (`tfidf_baseline/*.py`
and `TFIDF baseline.ipynb`; Shavrina et al., 2020, Section 4.1.1), `-m tfidf` on RSG tasks.

- Classification tasks: the task's fields joined by a space into one text, its TF-IDF vector into
  ``LogisticRegression()`` with scikit-learn's defaults. TERRa and RCB read premise + hypothesis,
  RUSSE sentence1 + sentence2 + word, RWSD text + span1 + span2, DaNetQA the question alone, PARus
  premise + a question sentence + choice1 + choice2 (label 0/1 is learnt from the pair as a whole),
  LiDiRus sentence1 + sentence2 with the TERRa-trained model.
- MuSeRC, unsupervised: per question, the two answers whose "question answer" text is most similar
  (TF-IDF cosine) to the passage are true, the rest false.
- RuCoS, unsupervised: the entity mention whose query (the mention in @placeholder) is most similar
  to the passage (its "@highlight" lines joined by spaces).

The scripts pick the best by the end of numpy's default argsort, whose order among equal scores is
not defined (it depends on numpy's version and the CPU's vector sort); rueval sorts stably, so ties
go to the later answer or mention, on every machine.

The scripts load a vectorizer fitted on a 20,000-document Wikipedia sample, which is not distributed.
rueval fits ``TfidfVectorizer(max_features=10000)`` per task on its train texts as the scripts build
them: the joined texts for classification (LiDiRus: TERRa's), the train passages for MuSeRC and RuCoS.
That is the choice that reproduces the scripts run with a train-fitted vectorizer on the official RSG
v1.1 val files: TERRa accuracy 44.30 exactly; MuSeRC F1a 61.92 / EM 28.92 where the script gives
61.82 / 28.73, the gap being 7 questions with tied answers, ordered otherwise by the script's unstable
sort (with the Wikipedia vectorizer the scripts give 46.58 and 58.41 / 24.95). The vocabulary is cut at
10,000 words as scikit-learn cuts it, like the scripts: by numpy's unstable sort where the cut falls
among words of equal frequency, so both move with the machine (TERRa over 42.0-45.6 across orders of
its tied words; docs/benchmarks.md, benchmarks/tfidf_tie_orders.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rueval.core.errors import RuevalError
from rueval.core.progress import progress
from rueval.solvers.tfidf.features import OFFICIAL_RSG, fit_classifier, fit_vectorizer, paired_cosines, vectorize
from rueval.tasks import Example, Task
from rueval.tasks.shapes import AnswerCheck, Cloze

PREDICT_BATCH = 256  # RuCoS queries whose filled-in candidates are vectorized at once
PARUS_QUESTIONS = {"cause": "Что было ПРИЧИНОЙ этого?", "effect": "Что случилось в РЕЗУЛЬТАТЕ?"}  # the scripts'


def _joined(*paths: str) -> Callable[[Example], str]:
    return lambda example: " ".join(example.text(path) for path in paths)


def _parus_text(example: Example) -> str:
    question = PARUS_QUESTIONS["cause" if example.text("question") == "cause" else "effect"]
    return " ".join((example.text("premise"), question, example.text("choice1"), example.text("choice2")))


# The scripts' joins that are not the task's texts in reading order (LiDiRus, fitted on TERRa's train
# split renamed by load_train, TERRa, RCB and RWSD join theirs).
JOINS: dict[str, Callable[[Example], str]] = {
    "parus": _parus_text,  # a question sentence between the premise and the choices
    "danetqa": _joined("question"),  # the question alone
    "russe": _joined("sentence1", "sentence2", "word"),  # the sentences, then the word
}


def joined_text(task: Task, example: Example) -> str:
    """The one text a classification example becomes."""
    return JOINS[task.name](example) if task.name in JOINS else " ".join(map(example.text, task.text_fields))


class JoinedTextModel:
    """Classification: the example's joined text -> logistic regression."""

    config = OFFICIAL_RSG

    def __init__(self, seed: int):
        self.seed = seed

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        texts = [joined_text(task, example) for example in progress(train, f"tfidf texts for {task.name}")]
        self.vectorizer = fit_vectorizer(self.config, task, texts)
        targets = [task.labels.index(example.label) for example in train]
        self.classifier = fit_classifier(self.config, self.seed, self.vectorizer.transform(texts), targets)

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        rows = self.classifier.predict(self.vectorizer.transform([joined_text(task, example) for example in examples]))
        return [task.labels[row] for row in rows]


def _passage(example: Example) -> str:
    return example.text("passage")


def _rucos_passage(example: Example) -> str:
    return example.text("passage").replace("\n@highlight\n", " ")


class _PassageCosines:
    """The vectorizer of the unsupervised tasks, fitted on the distinct train passages."""

    config = OFFICIAL_RSG
    passage = staticmethod(_passage)

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        passages = dict.fromkeys(self.passage(example) for example in train)  # examples of a passage share it
        self.vectorizer = fit_vectorizer(self.config, task, list(passages))


class TopTwoAnswersModel(_PassageCosines):
    """MuSeRC: per question, the two answers closest to the passage are true."""

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        passages = [self.passage(example) for example in examples]
        answers = [f"{example.text('question')} {example.text('answer')}" for example in examples]
        cosines = paired_cosines(vectorize(self.vectorizer, passages), vectorize(self.vectorizer, answers))
        positions: dict[Any, list[int]] = {}  # each question's answers, in order
        for position, example in enumerate(examples):
            positions.setdefault(example.group, []).append(position)
        predictions = [0] * len(examples)
        for question in positions.values():
            for best in np.argsort(cosines[question], kind="stable")[-2:]:  # ties: the later answer
                predictions[question[best]] = 1
        return predictions


class ClosestEntityModel(_PassageCosines):
    """RuCoS: the entity mention whose filled-in query is closest to the passage."""

    passage = staticmethod(_rucos_passage)

    def predict(self, task: Task, examples: Sequence[Example]) -> list[Any]:
        for example in examples:
            if not example.candidates:
                raise RuevalError(f"{task.name} example {example.key}: no entities to choose from")
        batches = (examples[start : start + PREDICT_BATCH] for start in range(0, len(examples), PREDICT_BATCH))
        return [answer for batch in batches for answer in self._predict_batch(batch)]

    def _predict_batch(self, examples: Sequence[Example]) -> list[str]:
        passages = [self.passage(example) for example in examples for _ in example.candidates]
        queries = [
            example.text("query").replace("@placeholder", mention)
            for example in examples
            for mention in example.candidates
        ]
        cosines = paired_cosines(vectorize(self.vectorizer, passages), vectorize(self.vectorizer, queries))
        predictions, start = [], 0
        for example in examples:
            scores = cosines[start : start + len(example.candidates)][::-1]
            predictions.append(example.candidates[-1 - int(np.argmax(scores))])  # ties: the later mention
            start += len(example.candidates)
        return predictions


Model = JoinedTextModel | TopTwoAnswersModel | ClosestEntityModel


def official_model(task: Task, seed: int) -> Model:
    """The scripts' model for an RSG task: by its shape."""
    if isinstance(task.shape, AnswerCheck):
        return TopTwoAnswersModel()
    if isinstance(task.shape, Cloze):
        return ClosestEntityModel()
    if task.kind == "classification":
        return JoinedTextModel(seed)
    raise RuevalError(f"the official RSG tfidf baseline does not cover task '{task.name}'")
