"""Fine-tuned encoders (``-m finetune:PATH_OR_HUB_ID``): RussianSuperGLUE's own protocol.

Every task's train split fine-tunes the encoder with the head jiant set up for it (``heads``), and
the fine-tuned model predicts the scored split. Defaults are jiant-russian's SuperGLUE BERT settings
(``jiant/config/superglue_bert.conf`` in RussianNLP/RussianSuperGLUE: lr 1e-5, batch size 4, at most
10 epochs, max_seq_len 256); jiant selected the model on val, here it is selected on a held-out slice
of train, since val may be the split being scored.

Each task trains under ``work_dir/<task>-<key>``: ``checkpoints/`` while training (a killed run
resumes from the last one), then ``model/`` with the weights, the tokenizer and a marker file
(``rueval-finetune.json``: task, head, label space, training figures). The key hashes the encoder's
revision, the options and the train inputs, so a finished task is loaded instead of retrained, and
LiDiRus, whose train examples are TERRa's, reuses TERRa's model. A directory holding such ``model/``
folders (``save_dir``) or one of them is itself a valid encoder: it is evaluated without training.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError

try:  # the finetune extra: -m finetune: without it is one line naming it, not a traceback
    import accelerate  # noqa: F401 - transformers' Trainer needs it
    from transformers import (
        AutoConfig,
        AutoModelForMultipleChoice,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        set_seed,
    )
    from transformers.utils import logging as transformers_logging

    from rueval.solvers.finetune import training
except ImportError as missing:
    raise RuevalError(
        f"-m finetune: needs {missing.name or 'torch and transformers'}, which is not installed: "
        "pip install torch && pip install 'rueval[finetune]'"
    ) from None

from rueval.core.paths import cache_dir
from rueval.models.backends.placement import model_revision
from rueval.solvers.base import ModelSize, Solver
from rueval.solvers.finetune.heads import Head, head_for
from rueval.solvers.finetune.training_options import FinetuneOptions
from rueval.tasks import Example, Task

MARKER = "rueval-finetune.json"


class FinetuneSolver(Solver):
    """Fine-tunes ``encoder`` (a local directory or a hub id) on each task's train examples in ``fit``."""

    def __init__(
        self,
        encoder: str,
        options: FinetuneOptions | None = None,
        work_dir: str | Path | None = None,
        save_dir: str | Path | None = None,
    ):
        if not encoder.strip():
            raise RuevalError("-m finetune: name the encoder after the colon, e.g. finetune:ai-forever/ruBert-base")
        self.name = f"finetune:{encoder}"
        self.encoder = encoder
        self.options = options or FinetuneOptions()
        self.work_dir = Path(work_dir) if work_dir else cache_dir("finetune")
        self.save_dir = Path(save_dir) if save_dir else None
        self.saved = fine_tuned_models(encoder)  # task -> model folder, when the encoder is already fine-tuned
        self.identity = f"finetune:{encoder}@{revision(encoder)}"
        self._task: str | None = None  # the task the loaded model was fitted for
        self._head: Head | None = None
        self._trainer: training.Trainer | None = None
        self._loaded_key: str | None = None
        self._reports: dict[str, dict[str, Any]] = {}

    def fit(self, task: Task, train: Sequence[Example]) -> None:
        head = head_for(task)
        if self.saved is not None:
            folder = self._saved_folder(task)
        else:
            folder = self._fine_tune(task, head, train)
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        if marker["key"] != self._loaded_key:
            model, tokenizer = _load(folder, head, task), AutoTokenizer.from_pretrained(folder)
            self._trainer = training.predictor(model, tokenizer, head, self.work_dir)
            self._loaded_key = marker["key"]
        self._task, self._head = task.name, head
        self._reports.setdefault(task.name, {**marker["report"], "trained_now": False})
        assert self._trainer is not None  # loaded above, or for this key before
        if self.save_dir is not None and self._trainer.is_world_process_zero():
            target = self.save_dir / marker["task"]
            if folder.resolve() != target.resolve():
                shutil.copytree(folder, target, dirs_exist_ok=True)

    def predict(self, task: Task, examples: Iterable[Example]) -> list[Any]:
        if self._task != task.name or self._trainer is None or self._head is None:
            raise RuevalError(f"{self.name}: predict({task.name}) before fit({task.name})")
        return training.predict(self._trainer, self._head, task, list(examples), self.options)

    def training_report(self, task: Task) -> dict[str, Any]:
        """Training figures of the task's model: time, train examples/s, peak memory, final train loss.
        ``trained_now`` is false when a finished model was loaded instead of trained."""
        return self._reports.get(task.name, {})

    def size(self) -> ModelSize | None:
        if self._trainer is None:
            return None
        parameters = list(self._trainer.model.parameters())
        return ModelSize(
            parameters=sum(p.numel() for p in parameters),
            megabytes=sum(p.numel() * p.element_size() for p in parameters) / 2**20,
        )

    def _fine_tune(self, task: Task, head: Head, train: Sequence[Example]) -> Path:
        """The folder of the task's fine-tuned model: trained now (resuming any checkpoint), or earlier."""
        trained_for = task.train_from.name if task.train_from else task.name  # LiDiRus learns from TERRa's train split
        unlabelled = next((e for e in train if e.label is None), None)
        if unlabelled is not None:
            raise RuevalError(f"{task.name}: train example {unlabelled.key} has no label to fine-tune on")
        key = self._key(task, head, train)
        folder = self.work_dir / f"{trained_for}-{key[:16]}"
        final = folder / "model"
        if (final / MARKER).exists():
            return final
        set_seed(self.options.seed)  # the new head's initial weights
        trainer, report = training.train(
            _load(self.encoder, head, task),
            AutoTokenizer.from_pretrained(self.encoder),
            head,
            task,
            train,
            self.options,
            folder / "checkpoints",
        )
        trainer.save_model(str(final))
        if trainer.is_world_process_zero():
            marker = {
                "task": trained_for,
                "head": head.kind,
                "labels": list(task.labels),
                "categories": list(task.categories),
                "key": key,
                "encoder": self.identity,
                "options": asdict(self.options),
                "report": report,
            }
            _write_json(final / MARKER, marker)
            shutil.rmtree(folder / "checkpoints", ignore_errors=True)
        trainer.accelerator.wait_for_everyone()
        self._reports[task.name] = {**report, "trained_now": True}
        return final

    def _key(self, task: Task, head: Head, train: Sequence[Example]) -> str:
        digest = hashlib.sha256()
        setup = [self.identity, head.kind, list(task.labels), list(task.categories), asdict(self.options)]
        digest.update(json.dumps(setup, sort_keys=True).encode())
        for example in train:
            inputs = [head.pairs(example), head.targets(task, example)]
            digest.update(json.dumps(inputs, ensure_ascii=False).encode())
        return digest.hexdigest()

    def _saved_folder(self, task: Task) -> Path:
        assert self.saved is not None
        for name in (task.name, task.train_from and task.train_from.name):
            folder = self.saved.get(name or "")
            if folder is not None:
                marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
                if marker["labels"] != _jsonable(task.labels) or marker["head"] != head_for(task).kind:
                    raise RuevalError(f"{folder}: fine-tuned for another label space than {task.name}'s")
                return folder
        raise RuevalError(
            f"{self.encoder} holds models fine-tuned for {', '.join(sorted(self.saved))}; "
            f"not for {task.name} (fine-tune one with its train split, or drop the task)"
        )


def _load(path: str | Path, head: Head, task: Task):
    """The encoder with the head's classifier on top (new weights, unless the folder was fine-tuned)."""
    transformers_logging.set_verbosity_error()  # else every load lists the new classifier weights
    transformers_logging.disable_progress_bar()
    if head.kind == "choice":
        return AutoModelForMultipleChoice.from_pretrained(path)
    problem = "multi_label_classification" if head.kind == "multilabel" else "single_label_classification"
    return AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=head.num_labels(task), problem_type=problem
    )


def _jsonable(labels: Sequence[Any]) -> list[Any]:
    return json.loads(json.dumps(list(labels)))


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Written whole or not at all: the marker's presence means the model beside it is complete."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    os.replace(temporary, path)


def fine_tuned_models(encoder: str) -> dict[str, Path] | None:
    """Task -> model folder when ``encoder`` is a folder fine-tuned by rueval (or holds such folders);
    None for a plain encoder."""
    root = Path(encoder)
    if not root.is_dir():
        return None
    folders = [root] if (root / MARKER).exists() else sorted(p.parent for p in root.glob(f"*/{MARKER}"))
    if not folders:
        return None
    return {json.loads((f / MARKER).read_text(encoding="utf-8"))["task"]: f for f in folders}


def revision(encoder: str) -> str:
    """The hub commit of the encoder, or a fingerprint of a local folder's files (every model
    folder's, for a folder of fine-tuned models)."""
    root = Path(encoder)
    if not root.is_dir():
        try:
            return model_revision(encoder, AutoConfig.from_pretrained(encoder))
        except OSError as error:
            raise RuevalError(f"cannot load encoder {encoder!r}: {error}") from None
    folders = sorted({root, *(p.parent for p in root.glob(f"*/{MARKER}"))})
    return hashlib.sha256("".join(model_revision(str(f)) for f in folders).encode()).hexdigest()[:16]


__all__ = ["FinetuneOptions", "FinetuneSolver", "fine_tuned_models", "revision"]
