"""The contamination check at full size: a tiny GPT-2 trained on half of a task's test items tells them from the
other half by its membership scores, and an untrained twin does not.

    python benchmarks/bench_contamination.py [--items 320] [--target-loss 0.1]

Not part of the test suite. TERRa's test split is written with --items new records (bench_fullsize's generator:
sentences walked through a bigram chain of the bundled samples' words, so no item is a sample's). Every other
item is a member: a tiny GPT-2 (4 layers, 128 wide) is trained on the members' texts as the audit reads them
(each record's string fields joined in order) until its mean loss on them is at most --target-loss. Then
`rueval contamination`'s audit runs on both models with the members named (--members): each score's AUROC and
TPR at 5% FPR, the verdict against perturbed twins, and the time. Results: benchmarks/results/bench_contamination.json
and .md.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import bench_fullsize  # beside this script: the full-size data generator
from results_file import write_results  # beside this script

from rueval.audit.contamination import AuditSettings, audit_contamination, item_text
from rueval.data import eval_split, open_data
from rueval.models.backends.tiny import build_tiny_gpt2, train_tiny_model
from rueval.models.factory import ModelOptions, open_engine
from rueval.tasks import get_task

RESULTS = Path(__file__).parent / "results"
TASK = "terra"
STEPS = 100  # training steps between checks of the members' loss
MAX_ROUNDS = 100


def write_items(folder: Path, n: int, seed: int = 0) -> Path:
    """TERRa/test.jsonl with ``n`` new records."""
    rng = random.Random(f"{seed}/{TASK}")
    texts = bench_fullsize.Texts(bench_fullsize.sentence_pool(None), rng)
    records = [bench_fullsize.BUILDERS[TASK](texts, rng, i) for i in range(n)]
    path = folder / bench_fullsize.RSG_FOLDERS[TASK] / "test.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return folder


def mean_loss(folder: Path, texts: list[str]) -> float:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    total = 0.0
    with torch.no_grad():
        for text in texts:
            batch = tokenizer(text + tokenizer.eos_token, return_tensors="pt", truncation=True, max_length=128)
            total += float(model(**batch, labels=batch["input_ids"]).loss)
    return total / len(texts)


def train_members(untrained: Path, trained: Path, texts: list[str], target: float) -> dict:
    shutil.copytree(untrained, trained)
    started, steps, loss = time.perf_counter(), 0, mean_loss(trained, texts)
    for round_ in range(MAX_ROUNDS):
        if loss <= target:
            break
        train_tiny_model(trained, texts, steps=STEPS, seed=round_)
        steps += STEPS
        loss = mean_loss(trained, texts)
        print(f"trained {steps} steps: members' loss {loss:.3f}", file=sys.stderr, flush=True)
    return {"steps": steps, "members_loss": round(loss, 4), "training_seconds": round(time.perf_counter() - started, 1)}


def audit(model: Path, data: Path, out: Path, members: frozenset[str]) -> dict:
    started = time.perf_counter()
    engine = open_engine(f"hf:{model}", ModelOptions(cache="off", batch_size=16))
    found = audit_contamination(engine, [get_task(TASK)], str(data), out, AuditSettings(members=members)).tasks[TASK]
    return {
        "audit_seconds": round(time.perf_counter() - started, 1),
        "verdict_against_twins": found.verdict,
        "p_value": next(t.p_value for t in found.tests if t.score == found.primary),
        **{f"auroc_{m.score}": round(m.auroc, 4) for m in found.membership},
        **{f"tpr_at_5_fpr_{m.score}": round(m.tpr_at_5_fpr, 4) for m in found.membership},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=320)
    parser.add_argument("--target-loss", type=float, default=0.1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work_dir = Path(work)
        data = write_items(work_dir / "data", args.items)
        task = get_task(TASK)
        examples = eval_split(open_data(str(data)), task, None, None, predict_only=True).examples
        members = examples[::2]
        untrained = build_tiny_gpt2(work_dir / "untrained", n_layer=4, n_embd=128, n_head=4)
        training = train_members(
            untrained, work_dir / "trained", [item_text(task, e, "fields") for e in members], args.target_loss
        )
        ids = frozenset(e.key for e in members)
        rows = [
            {"model": "trained on the members", **training, **audit(work_dir / "trained", data, work_dir / "a", ids)},
            {"model": "untrained twin", **audit(untrained, data, work_dir / "b", ids)},
        ]
    write_results(RESULTS / "bench_contamination.json", rows, task=TASK, items=len(examples), members=len(ids))
    scores = ("min_k_pp", "min_k", "zlib", "ppl", "perturbation")
    lines = [
        f"TERRa test, {len(examples)} new items, {len(ids)} members (every other one); tiny GPT-2 4x128",
        "",
        "| model | " + " | ".join(f"AUROC {s}" for s in scores) + " | TPR@5%FPR min_k_pp | verdict (twins) | audit s |",
        "|---|" + "---|" * (len(scores) + 3),
    ]
    for row in rows:
        aurocs = " | ".join(f"{row.get(f'auroc_{s}', float('nan')):.3f}" for s in scores)
        lines.append(
            f"| {row['model']} | {aurocs} | {row['tpr_at_5_fpr_min_k_pp']:.3f} | {row['verdict_against_twins']} "
            f"| {row['audit_seconds']} |"
        )
    (RESULTS / "bench_contamination.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
