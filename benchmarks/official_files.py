"""Every official file under a folder, read through rueval's loaders and its perturbation path,
with the refusals counted (there should be none).

    python benchmarks/official_files.py PATH [--no-perturb] [--limit N] [--json OUT]

PATH is any folder holding official data: the RSG download, TAPE's repository, or both. Every task
split rueval finds under it is loaded as `rueval run` loads it (records parsed, labels and inline
options checked, TAPE's episodes sets read, with their perturbed copies). Then each evaluation
split (val, test: what `rueval perturb --split` takes) goes through the model-free perturbations as
`rueval perturb` and `rueval run --perturb` make them, constraints and semantic filter included.
A refusal is a split, or its perturbation, that stops with a RuevalError (a data error naming
file:line:field); each is printed. Every .jsonl under PATH that no task reads is
listed too, so a file in an unexpected place is seen. Exit code 1 when anything was refused.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.data import open_data
from rueval.run.robustness import Robustness
from rueval.tasks import TASKS, Task


def read_split(source: Any, task: Task, split: str, robustness: Robustness | None, limit: int | None) -> dict:
    """One split: how many examples it gives, how many perturbed copies, and the refusal if any."""
    row: dict[str, Any] = {"task": task.name, "split": split, "file": "", "examples": 0, "perturbed": 0, "refused": ""}
    try:
        loaded = source.load(task, split)
        row["file"] = str(loaded.file)
        examples = loaded.examples[:limit] if limit else loaded.examples
        row["examples"] = len(examples)
        perturbed = source.load_perturbed(task, split)  # copies a TAPE episodes file already holds
        row["perturbed"] = sum(map(len, perturbed.perturbed.values())) if perturbed else 0
        if robustness is not None and split != "train":
            made = robustness.generate(task, examples, loaded.file)
            row["perturbed"] += sum(len(filtered.kept) for filtered in made.values())
    except RuevalError as e:
        row["refused"] = str(e)
    return row


def official_files(path: Path, perturb: bool = True, limit: int | None = None) -> dict[str, Any]:
    source = open_data(str(path))
    robustness = Robustness.from_options("all") if perturb else None
    rows = []
    for task in TASKS.values():
        for split in task.splits:
            if source.has_split(task, split):
                started = time.perf_counter()
                rows.append(read_split(source, task, split, robustness, limit))
                rows[-1]["seconds"] = round(time.perf_counter() - started, 1)
                print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    read = {Path(row["file"]).resolve() for row in rows if row["file"]}
    unread = sorted(str(f) for f in path.rglob("*.jsonl") if f.resolve() not in read)
    refusals = [row for row in rows if row["refused"]]
    return {"path": str(path), "splits": rows, "refusals": len(refusals), "unread": unread}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--no-perturb", action="store_true", help="load only")
    parser.add_argument("--limit", type=int, default=None, help="perturb the first N examples of each split")
    parser.add_argument("--json", type=Path, default=None, help="write the summary here")
    args = parser.parse_args()
    summary = official_files(args.path, not args.no_perturb, args.limit)
    for row in summary["splits"]:
        shown = f"REFUSED: {row['refused']}" if row["refused"] else f"{row['perturbed']} perturbed copies"
        print(f"{row['task']:>13} {row['split']:<5} {row['examples']:>6} examples  {shown}")
    for unread in summary["unread"]:
        print(f"not read by any task: {unread}")
    print(f"{len(summary['splits'])} splits read, {summary['refusals']} refused")
    if args.json:
        args.json.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    raise SystemExit(1 if summary["refusals"] else 0)


if __name__ == "__main__":
    main()
