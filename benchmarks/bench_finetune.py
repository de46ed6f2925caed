"""Fine-tunes one small encoder on TERRa's train split twice on CPU: with rueval's ``finetune`` solver and
with a plain transformers Trainer script, then compares throughput, peak memory and val accuracy.

    python benchmarks/bench_finetune.py --data RSG_DIR [--epochs 2] [--lr 1e-4] [--batch-size 16]

Not part of the test suite. The encoder is rueval's tiny BERT (``build_tiny_bert``: 4 layers, 256
wide, random weights, a WordPiece vocabulary trained on the bundled samples), so the accuracy is near
chance on real TERRa; the point is that both sides reach the same accuracy at different speeds.

The plain side is what a user copies from transformers' text-classification example: every pair
tokenized and padded to max_length (256), random batches, ``default_data_collator``. rueval pads each
batch to its longest pair and groups pairs of similar length. Both train on the whole train split
(rueval's held-out slice is off) with the same epochs, learning rate, batch size and seed, and both
predict val. Each side runs in a fresh process, so its peak RSS (resource.getrusage) is its own.
Writes benchmarks/results/bench_finetune.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "results" / "bench_finetune.json"
MAX_LENGTH = 256
LABELS = ("entailment", "not_entailment")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux


def run_rueval(encoder: str, data: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from rueval.data import load_task_data, open_data
    from rueval.solvers.finetune import FinetuneOptions, FinetuneSolver
    from rueval.tasks import TASKS

    task = TASKS["terra"]
    loaded = load_task_data(open_data(data), task, "val", None)
    options = FinetuneOptions(
        epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, max_length=MAX_LENGTH, seed=args.seed, heldout=0.0
    )
    solver = FinetuneSolver(encoder, options, work_dir=work)
    started = time.perf_counter()
    solver.fit(task, loaded.train.examples)
    train_seconds = time.perf_counter() - started
    started = time.perf_counter()
    predictions = solver.predict(task, loaded.eval.examples)
    predict_seconds = time.perf_counter() - started
    correct = sum(p == e.label for p, e in zip(predictions, loaded.eval.examples, strict=True))
    return _figures(len(loaded.train.examples), train_seconds, len(predictions), predict_seconds, correct, args)


def run_plain(encoder: str, data: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The text-classification example's recipe, on TERRa's jsonl files."""
    import numpy as np
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        Trainer,
        TrainingArguments,
        default_data_collator,
        set_seed,
    )

    def read(split: str) -> list[dict[str, Any]]:
        lines = (Path(data) / "TERRa" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    tokenizer = AutoTokenizer.from_pretrained(encoder)

    def features(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        encoded = tokenizer(
            [r["premise"] for r in rows],
            [r["hypothesis"] for r in rows],
            padding="max_length",
            max_length=MAX_LENGTH,
            truncation=True,
        )
        return [
            {**{k: v[i] for k, v in encoded.items()}, "labels": LABELS.index(r["label"])} for i, r in enumerate(rows)
        ]

    train, val = features(read("train")), features(read("val"))
    set_seed(args.seed)
    model = AutoModelForSequenceClassification.from_pretrained(encoder, num_labels=len(LABELS))
    training_args = TrainingArguments(
        output_dir=str(work),
        num_train_epochs=args.epochs,
        learning_rate=args.lr,
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=32,
        seed=args.seed,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=training_args, train_dataset=train, data_collator=default_data_collator)
    started = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - started
    started = time.perf_counter()
    logits = trainer.predict(val).predictions
    predict_seconds = time.perf_counter() - started
    correct = int(np.sum(logits.argmax(-1) == np.array([f["labels"] for f in val])))
    return _figures(len(train), train_seconds, len(val), predict_seconds, correct, args)


def _figures(n_train: int, train_s: float, n_val: int, predict_s: float, correct: int, args) -> dict[str, Any]:
    return {
        "train_examples": n_train,
        "train_seconds": train_s,
        "train_examples_per_s": n_train * args.epochs / train_s,
        "val_examples": n_val,
        "predict_seconds": predict_s,
        "predict_examples_per_s": n_val / predict_s,
        "val_accuracy": correct / n_val,
        "peak_rss_mb": peak_rss_mb(),
    }


SIDES = {"rueval": run_rueval, "plain": run_plain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a folder with TERRa/{train,val}.jsonl")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # one side, in its own process
    parser.add_argument("--encoder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        with tempfile.TemporaryDirectory() as work:
            print(json.dumps(SIDES[args.side](args.encoder, args.data, args, Path(work))))
        return

    from rueval.models.backends.tiny import build_tiny_bert

    with tempfile.TemporaryDirectory() as folder:
        encoder = str(build_tiny_bert(Path(folder), num_hidden_layers=4, hidden_size=256, num_attention_heads=4))
        results = {}
        for side in SIDES:
            command = [sys.executable, __file__, *sys.argv[1:], "--side", side, "--encoder", encoder]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[side] = json.loads(output.strip().splitlines()[-1])
            print(side, results[side], file=sys.stderr)
    summary = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "encoder": "tiny BERT: 4 layers, 256 wide, 4 heads, random weights",
        "settings": {"epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "seed": args.seed},
        "max_length": MAX_LENGTH,
        **results,
        "train_speedup": results["rueval"]["train_examples_per_s"] / results["plain"]["train_examples_per_s"],
        "predict_speedup": results["rueval"]["predict_examples_per_s"] / results["plain"]["predict_examples_per_s"],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
