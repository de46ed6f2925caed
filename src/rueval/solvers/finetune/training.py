"""Fine-tuning and prediction with transformers' Trainer: encoding, the held-out slice, checkpoints, progress.

The Trainer does the distribution (under ``torchrun`` or ``accelerate launch`` every process runs
the same code, gradients are averaged and predictions gathered), mixed precision, length-grouped
batches and checkpoints with resume; this module decides what it is given.
"""

from __future__ import annotations

import atexit
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from transformers import (
    DataCollatorForMultipleChoice,
    DataCollatorWithPadding,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)
from transformers.trainer_callback import PrinterCallback
from transformers.trainer_utils import get_last_checkpoint

from rueval.core.errors import RuevalError
from rueval.core.memory import peak_rss_mb
from rueval.solvers.finetune.heads import Head
from rueval.tasks import Example, Task

if TYPE_CHECKING:
    from rueval.solvers.finetune.training_options import FinetuneOptions

PREDICT_BATCH = 32
LOG_STEPS = 10  # train loss is logged (and shown) every this many optimizer steps
PLAIN_PROGRESS_SECONDS = 10.0  # how often a log (not a terminal) gets a progress line


def encode(
    tokenizer: PreTrainedTokenizerBase,
    head: Head,
    task: Task,
    examples: Sequence[Example],
    options: FinetuneOptions,
    labelled: bool,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Model inputs for the examples and how many inputs each example owns: one, except one per
    distinct candidate for a ``candidate`` head. A ``choice`` input holds every option of its example,
    padded with empty options to the most any example has (RuWorldTree mixes four and five)."""
    pairs = [head.pairs(e) for e in examples]
    if head.kind == "choice" and pairs:
        width = max(map(len, pairs))
        pairs = [own + [(own[0][0], "")] * (width - len(own)) for own in pairs]
    flat = [pair for example_pairs in pairs for pair in example_pairs]
    if not flat:
        return [], [0] * len(examples)
    seconds = [second for _, second in flat]
    encoded = tokenizer(
        [first for first, _ in flat],
        None if all(s is None for s in seconds) else [s or "" for s in seconds],
        truncation=True,
        max_length=options.max_length,
        padding=False if options.dynamic_padding else "max_length",
    )
    rows = [{name: encoded[name][i] for name in encoded} for i in range(len(flat))]
    features: list[dict[str, Any]] = []
    counts: list[int] = []
    start = 0
    for example, example_pairs in zip(examples, pairs, strict=True):
        own, start = rows[start : start + len(example_pairs)], start + len(example_pairs)
        targets = head.targets(task, example) if labelled else [None] * len(own)
        if head.kind == "choice":
            own, targets = [{name: [row[name] for row in own] for name in own[0]}], targets[:1]
        for row, target in zip(own, targets, strict=True):
            features.append(row if target is None else {**row, "labels": target})
        counts.append(len(own))
    return features, counts


def split_heldout(examples: Sequence[Example], share: float, seed: int) -> tuple[list[Example], list[Example]]:
    """Train and held-out examples for model selection. Whole passages go to one side (MuSeRC's
    answers and RuCoS's queries share them), so the held-out slice has no passage seen in training."""
    passages = list(dict.fromkeys(_passage(e) for e in examples))
    n_heldout = round(len(passages) * share)
    if share <= 0 or n_heldout == 0 or n_heldout == len(passages):
        return list(examples), []
    heldout = set(random.Random(seed).sample(passages, n_heldout))
    return [e for e in examples if _passage(e) not in heldout], [e for e in examples if _passage(e) in heldout]


def _passage(example: Example) -> Any:
    return example.idx[0] if isinstance(example.idx, tuple) else example.key


def collator(tokenizer: PreTrainedTokenizerBase, head: Head):
    return (DataCollatorForMultipleChoice if head.kind == "choice" else DataCollatorWithPadding)(tokenizer)


def _accuracy(head: Head):
    def compute(prediction) -> dict[str, float]:
        logits, labels = prediction.predictions, prediction.label_ids
        predicted = (logits > 0).astype(float) if head.kind == "multilabel" else logits.argmax(-1)
        return {"accuracy": float(np.mean(predicted == labels))}

    return compute


def arguments(options: FinetuneOptions, output_dir: Path, select: bool) -> TrainingArguments:
    """The Trainer's settings from the options; ``select``: evaluate on the held-out slice at every
    checkpoint and end with the best model."""
    on_gpu = torch.cuda.is_available()
    if options.precision != "fp32" and not on_gpu:
        raise RuevalError(f"precision {options.precision} needs a GPU; on CPU use fp32")
    cadence = "steps" if options.checkpoint_steps else "epoch"
    return TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=options.epochs,
        learning_rate=options.lr,
        per_device_train_batch_size=options.batch_size,
        per_device_eval_batch_size=PREDICT_BATCH,
        gradient_accumulation_steps=options.gradient_accumulation,
        seed=options.seed,
        data_seed=options.seed,
        train_sampling_strategy="group_by_length" if options.group_by_length else "random",
        fp16=options.precision == "fp16",
        bf16=options.precision == "bf16",
        save_strategy=cadence,
        save_steps=options.checkpoint_steps or 500,
        eval_strategy=cadence if select else "no",
        eval_steps=options.checkpoint_steps,
        load_best_model_at_end=select,
        metric_for_best_model="accuracy" if select else None,
        save_total_limit=2,
        logging_strategy="steps",
        logging_steps=LOG_STEPS,
        report_to="none",
        disable_tqdm=True,
        use_cpu=not on_gpu,
        ddp_backend=_ddp_backend(),
        remove_unused_columns=False,
    )


def _ddp_backend() -> str | None:
    """gloo for several CPU processes (torchrun sets WORLD_SIZE); otherwise the Trainer's choice."""
    several = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if several:
        atexit.unregister(_close_process_group)  # once, however many trainers a run makes
        atexit.register(_close_process_group)
    return "gloo" if several and not torch.cuda.is_available() else None


def _close_process_group() -> None:
    """Tear the process group down before the interpreter does: a gloo group left to the interpreter's
    exit aborts the process ("terminate called without an active exception") after the work is done."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def train(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    head: Head,
    task: Task,
    examples: Sequence[Example],
    options: FinetuneOptions,
    output_dir: Path,
) -> tuple[Trainer, dict[str, Any]]:
    """Fine-tune on the examples (less the held-out slice), resuming from the last checkpoint in
    ``output_dir`` if there is one. The trainer (holding the final model) and the training figures."""
    fit_examples, heldout = split_heldout(examples, options.heldout, options.seed)
    train_features, _ = encode(tokenizer, head, task, fit_examples, options, labelled=True)
    eval_features = encode(tokenizer, head, task, heldout, options, labelled=True)[0] if heldout else None
    if not train_features:
        raise RuevalError(f"{task.name}: no labelled train examples to fine-tune on")
    trainer = Trainer(
        model=model,
        args=arguments(options, output_dir, select=bool(eval_features)),
        train_dataset=train_features,
        eval_dataset=eval_features,
        processing_class=tokenizer,
        data_collator=collator(tokenizer, head),
        compute_metrics=_accuracy(head) if eval_features else None,
        callbacks=[TrainingProgress(task.name)],
    )
    trainer.remove_callback(PrinterCallback)  # our progress shows the loss; no dicts printed on stdout
    resume = get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None
    started = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    report = {
        "train_examples": len(train_features),
        "heldout_examples": len(eval_features or ()),
        "epochs": options.epochs,
        "steps": trainer.state.global_step,
        "resumed_from_step": int(Path(resume).name.rsplit("-", 1)[1]) if resume else 0,
        "train_seconds": time.perf_counter() - started,
        "train_examples_per_s": result.metrics.get("train_samples_per_second"),
        "final_train_loss": losses[-1] if losses else result.training_loss,
        "mean_train_loss": result.training_loss,
        "best_heldout_accuracy": trainer.state.best_metric,
        "peak_rss_mb": peak_rss_mb(),
        **({"peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20} if torch.cuda.is_available() else {}),
    }
    return trainer, report


def predictor(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, head: Head, output_dir: Path) -> Trainer:
    """A trainer that only predicts (a loaded model): it gathers predictions across processes too."""
    args = TrainingArguments(
        output_dir=str(output_dir),
        per_device_eval_batch_size=PREDICT_BATCH,
        report_to="none",
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),
        ddp_backend=_ddp_backend(),
        remove_unused_columns=False,
    )
    trainer = Trainer(model=model, args=args, processing_class=tokenizer, data_collator=collator(tokenizer, head))
    trainer.remove_callback(PrinterCallback)
    return trainer


def predict(
    trainer: Trainer, head: Head, task: Task, examples: Sequence[Example], options: FinetuneOptions
) -> list[Any]:
    """One prediction per example. Inputs go through the model longest first, so batches pad little."""
    features, counts = encode(trainer.processing_class, head, task, examples, options, labelled=False)
    if head.kind == "choice":  # transformers' multiple-choice collator needs labels; their loss is ignored
        features = [{**feature, "labels": 0} for feature in features]
    order = sorted(range(len(features)), key=lambda i: -_length(features[i]))
    scores = np.empty((len(features), *_score_shape(head, task, features)), dtype=np.float32)
    if features:
        scores[order] = trainer.predict([features[i] for i in order]).predictions
    predictions, start = [], 0
    for example, count in zip(examples, counts, strict=True):
        own = scores[start : start + count].tolist()
        start += count
        predictions.append(head.decode(task, example, own[0] if head.kind == "choice" else own))
    return predictions


def _length(feature: dict[str, Any]) -> int:
    ids = feature["input_ids"]
    return max(map(len, ids)) * len(ids) if ids and isinstance(ids[0], list) else len(ids)


def _score_shape(head: Head, task: Task, features: Sequence[dict[str, Any]]) -> tuple[int, ...]:
    if head.kind == "choice":  # one score per option, padding included
        return (len(features[0]["input_ids"]) if features else len(task.labels),)
    return (head.num_labels(task),)


class TrainingProgress(TrainerCallback):
    """A bar with the latest train loss on a terminal's stderr; a plain line every few seconds in a
    log. Only the main process draws."""

    def __init__(self, name: str):
        self.name = name
        self.console = Console(stderr=True)
        self.bar: Progress | None = None
        self.loss: float | None = None
        self.last_line = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero and self.console.is_terminal:
            self.bar = Progress(
                TextColumn(f"fine-tuning on {self.name}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]}"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.bar_task = self.bar.add_task("train", total=state.max_steps, completed=state.global_step, loss="-")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.loss = logs["loss"]

    def on_step_end(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        loss = "-" if self.loss is None else f"{self.loss:.4f}"
        if self.bar is not None:
            self.bar.update(self.bar_task, completed=state.global_step, loss=loss)
        elif time.monotonic() - self.last_line >= PLAIN_PROGRESS_SECONDS or state.global_step == state.max_steps:
            self.last_line = time.monotonic()
            self.console.print(f"fine-tuning on {self.name}: step {state.global_step}/{state.max_steps}, loss {loss}")

    def on_train_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
