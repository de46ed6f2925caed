"""The linear baselines of both papers: TF-IDF features and logistic regression, with scikit-learn.

- `-m tfidf` on RSG tasks is the RSG repository's TF-IDF baseline as its scripts build it
  (``official.py``): one TF-IDF vector of the task's joined text into logistic regression, MuSeRC and
  RuCoS by cosine similarity, the vectorizer fitted on the train texts in place of the paper's
  Wikipedia sample.
- `-m tfidf` on TAPE tasks is TAPE's linear baseline, word 1-4-grams (``fields.py``).
- `-m tfidf-fields` reads RSG tasks as rueval reads TAPE's (``fields.py``): each field's vector plus
  their pairwise cosines, options scored one by one. rueval's own improvement, never the default.

Fitted models are cached on disk (``cache_dir("tfidf")``), keyed by the train examples' content,
the model and its parameters and the library versions, so a second run on the same data skips fitting.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

import joblib
import sklearn

from rueval import __version__
from rueval.core.errors import RuevalError
from rueval.core.files import atomic_path
from rueval.core.paths import cache_dir
from rueval.core.progress import step, warn
from rueval.solvers.base import Solver
from rueval.solvers.tfidf import fields, official
from rueval.tasks import RSG, Example, Task

Model = fields.Model | official.Model
VARIANTS = {"official": "tfidf", "fields": "tfidf-fields"}  # variant -> model name


class TfidfSolver(Solver):
    """`-m tfidf` (the papers' baselines) or `-m tfidf-fields` (RSG tasks read field by field)."""

    def __init__(self, seed: int = 0, variant: str = "official"):
        if variant not in VARIANTS:
            raise ValueError(f"unknown tfidf variant {variant!r}")
        self.seed, self.variant, self.name = seed, variant, VARIANTS[variant]

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        labelled = [example for example in train if example.label is not None]
        if not labelled:
            raise RuevalError(f"{task.name}: the tfidf baseline needs labelled train examples, and the data has none")
        model = self._model_for(task)
        path = cache_dir("tfidf") / f"{task.name}-{self._cache_key(task, model, labelled)}.joblib"
        if path.exists():
            self._model = joblib.load(path)
            return
        with step(f"fitting TF-IDF on {len(labelled):,} {task.name} train examples"):
            model.fit(task, labelled)
        try:
            with atomic_path(path) as tmp:
                joblib.dump(model, tmp)
        except RuevalError as e:  # a cache that cannot be written (read-only, full): the run goes on
            warn(f"{e}; the fitted model is not cached")
        self._model = model

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        examples = list(examples)
        return self._model.predict(task, examples) if examples else []

    def _model_for(self, task: Task) -> Model:
        if task.benchmark == RSG.name and self.variant == "official":  # the RSG repository's scripts
            return official.official_model(task, self.seed)
        return fields.fields_model(task, self.seed)

    def _cache_key(self, task: Task, model: Model, train: Sequence[Example]) -> str:
        """A hash of what the fitted model depends on: the train data, the model and its parameters,
        the code versions."""
        settings = {
            "task": task.name,
            "model": type(model).__name__,
            "config": asdict(model.config),
            "seed": self.seed,
            "versions": {"rueval": __version__, "scikit-learn": sklearn.__version__},
        }
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
        for example in train:
            content = [example.fields, example.label, example.candidates]
            digest.update(json.dumps(content, sort_keys=True, ensure_ascii=False, default=str).encode() + b"\n")
        return digest.hexdigest()[:32]


__all__ = ["VARIANTS", "TfidfSolver"]
