"""The reproduction table: rueval's baselines on official RSG data beside the figures the reference
implementations give on the same files.

    python benchmarks/reproduce.py --data DIR [--split val] [--out reproduce/]

DIR is an RSG directory in the official layout (e.g. the RSG v1.1 download). Runs majority, random,
weighted random, the heuristics with every rule of the paper (`--rules all`) and with the default
rule choice, and TF-IDF, on every task of TERRa, MuSeRC and RUSSE that DIR holds, and prints a
Markdown table. Not part of the test suite.

A task folder without a train split (the redistributed RUSSE has only val) is scored with val
standing in for train, as the reference figures were obtained (a note says so); that makes a
trained model's score on that task optimistic.

The reference figures were obtained by running the reference implementations themselves on the
RSG v1.1 val files: the heuristics authors' notebooks and solvers (tatiana-iazykova/
2020_HACK_RUSSIANSUPERGLUE, the heuristics paper's footnote 1) and the TF-IDF scripts of the
RussianNLP/RussianSuperGLUE repository (vectorizer fitted on train), as listed with the official
files this project was checked against. RUSSE's TF-IDF figure used the official RUSSE train split.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from rueval.run import RunSpec, run
from rueval.tasks import get_task

# (task, system) -> reference figure x100; MuSeRC as (F1a, EM)
REFERENCE: dict[tuple[str, str], tuple[float, ...]] = {
    ("terra", "majority"): (49.84,),
    ("terra", "heuristic-all"): (59.61,),
    ("terra", "tfidf"): (44.30,),
    ("muserc", "majority"): (0.00, 0.00),
    ("muserc", "heuristic-all"): (66.42, 20.23),
    ("muserc", "tfidf"): (61.82, 28.73),
    ("russe", "majority"): (63.09,),
    ("russe", "heuristic-all"): (62.53,),
    ("russe", "tfidf"): (66.55,),
}
SYSTEMS = {  # name -> (model, solver options)
    "majority": ("majority", {}),
    "random": ("random", {}),
    "weighted-random": ("weighted-random", {}),
    "heuristic-all": ("heuristic", {"fallback": "majority", "rules": "all"}),
    "heuristic": ("heuristic", {"fallback": "majority", "rules": "fitted"}),
    "tfidf": ("tfidf", {}),
}
TASKS = ("terra", "muserc", "russe")


def with_train_splits(data: Path, work: Path) -> tuple[Path, list[str]]:
    """A copy of ``data`` in which every task folder without train.jsonl has val.jsonl as its train split."""
    copy = work / "data"
    shutil.copytree(data, copy)
    notes = []
    for name in TASKS:
        for folder in copy.rglob(get_task(name).folder):
            if (folder / "val.jsonl").exists() and not (folder / "train.jsonl").exists():
                shutil.copy(folder / "val.jsonl", folder / "train.jsonl")
                notes.append(f"{name}: no train split in {data}; val stands in for train")
    return copy, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--split", default="val")
    parser.add_argument("--out", type=Path, default=Path("reproduce"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        data, notes = with_train_splits(args.data, Path(work))
        tasks = [get_task(name) for name in TASKS if any(data.rglob(get_task(name).folder))]
        rows = []
        for system, (model, options) in SYSTEMS.items():
            spec = RunSpec.create([t.name for t in tasks], model, options, data=data, split=args.split)
            summary = run(spec, args.out / system, force=True)
            for task in tasks:
                metrics = tuple(summary.tasks[task.name].metrics.values())
                reference = REFERENCE.get((task.name, system))
                rows.append((task.name, system, metrics, reference))
    print("| task | system | rueval | reference | difference |")
    print("|---|---|---|---|---|")
    for task, system, metrics, reference in rows:
        shown = " / ".join(f"{v:.2f}" for v in metrics)
        if reference is None:
            print(f"| {task} | {system} | {shown} | - | - |")
            continue
        difference = " / ".join(f"{v - r:+.2f}" for v, r in zip(metrics, reference, strict=True))
        print(f"| {task} | {system} | {shown} | {' / '.join(f'{r:.2f}' for r in reference)} | {difference} |")
    for note in notes:
        print(f"\nnote: {note}")


if __name__ == "__main__":
    main()
