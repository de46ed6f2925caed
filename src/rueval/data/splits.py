"""Which splits a task is evaluated on and learns from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from rueval.core.errors import RuevalError
from rueval.data.local import DataSource, Split
from rueval.data.records import Dataset


@dataclass(frozen=True)
class TaskData:
    """What one task is evaluated on: the scored split and the split the solver learns from."""

    eval: Split
    train: Split | None

    @property
    def sha256(self) -> str:
        """One hash over the files the task's score depends on."""
        parts = [self.eval.sha256, self.train.sha256 if self.train else ""]
        return hashlib.sha256("/".join(parts).encode()).hexdigest()


def load_task_data(
    source: DataSource, dataset: Dataset, split: str | None, limit: int | None, predict_only: bool = False
) -> TaskData:
    return TaskData(eval_split(source, dataset, split, limit, predict_only), load_train(source, dataset))


def eval_split(
    source: DataSource, dataset: Dataset, split: str | None, limit: int | None, predict_only: bool = False
) -> Split:
    """The requested split, or by default test when it is labelled, else val; test without answers
    when there is no val (MERA's tasks with train and test only), to be predicted, not scored.
    ``predict_only`` (lm-eval's --predict_only): the requested split, else test, else val, answers or not."""
    if split is not None:
        chosen = source.load(dataset, split, limit)
        if not chosen.labelled and not predict_only:
            raise RuevalError(
                f"{chosen.file}: the {split} split of {dataset.name} has no gold labels, so it cannot be "
                "scored; score val, or predict it with --predict-only or `rueval submit`"
            )
        return chosen
    test = source.load(dataset, "test", limit) if source.has_split(dataset, "test") else None
    if test is not None and (test.labelled or predict_only):
        return test
    if "val" not in dataset.split_files or not source.has_split(dataset, "val"):
        if test is None:
            raise source.missing(dataset, "test")
        return test  # no answers and nothing to score instead: predicted, not scored
    return source.load(dataset, "val", limit)


def load_train(source: DataSource, dataset: Dataset) -> Split | None:
    """The dataset's train split, or the one it borrows (LiDiRus: TERRa's), its fields renamed to
    the dataset's own (premise -> sentence1), so solvers see one layout."""
    if source.has_split(dataset, "train"):
        return source.load(dataset, "train")
    lender = dataset.train_from
    if lender is not None and source.has_split(lender, "train"):
        borrowed = source.load(lender, "train")
        renames = dataset.train_fields
        examples = [
            replace(e, fields={renames.get(name, name): value for name, value in e.fields.items()})
            for e in borrowed.examples
        ]
        return replace(borrowed, task=dataset, examples=examples)
    return None
