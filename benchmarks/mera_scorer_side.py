"""MERA's own scoring code on a submission zip that rueval exported, beside rueval's scores of the same
answers. Not part of rueval, nor imported by it; run in a virtualenv of the scorer's own.

    SIDE_VENV/bin/python benchmarks/mera_scorer_side.py MERA_SCORING GOLD SUBMISSION.zip RUN_DIR OUT.json

MERA_SCORING: MERA-Evaluation/MERA's modules/scoring (its files as they are, e.g. exported with
``git show HEAD:modules/scoring/...`` from a fetched copy); its pins are transformers 4.30.2, omegaconf
2.0.6, boto3 and scikit-learn 1.0.2, which does not build for Python 3.11: the current scikit-learn
(its ``sklearn.metrics.f1_score``, the one function used, is unchanged), with ``datasets`` and torch
(imported by its ``update_seed``) as they install. GOLD: a labelled MERA folder in the dataset
repository's layout (a local snapshot: data/<config>/<split>.jsonl and the card's ``configs``), whose
test split has the answers. RUN_DIR: the rueval run that scored GOLD's test split and was exported.

The scorer runs as published: its Worker loads the gold of each task with its own ``load_gold``
(``datasets.load_dataset(path="ai-forever/MERA", name=...)``, pointed here at GOLD: the one change,
made by wrapping ``datasets.load_dataset``), validates the zip and scores it. Only the seven tasks
rueval shares are registered (the package's __init__ imports every task, ruDetox's models too).
Writes OUT.json with both sides' figures; exits 1 when any differs.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path

# MERA's scorer module and metric names -> rueval's task and metric names
SHARED = {
    "parus": ("parus", {"acc": "accuracy"}),
    "rcb": ("rcb", {"acc": "accuracy", "f1_macro": "avg_f1"}),
    "rwsd": ("rwsd", {"acc": "accuracy"}),
    "ruworldtree": ("ru_worldtree", {"acc": "accuracy", "f1_macro": "macro_f1"}),
    "ruopenbookqa": ("ru_openbook", {"acc": "accuracy", "f1_macro": "macro_f1"}),
    "multiq": ("multiq", {"f1": "token_f1", "em": "exact_match"}),
    "chegeka": ("chegeka", {"f1": "token_f1", "em": "exact_match"}),
}
TOLERANCE = 1e-9


def mera_scores(scoring: Path, gold: Path, submission: Path) -> dict:
    """MERA's Worker on the submission, the gold read from ``gold``: its response (results, errors)."""
    import datasets
    import sklearn.metrics  # noqa: F401  (its metrics module reads sklearn.metrics after a bare `import sklearn`)

    load_dataset = datasets.load_dataset

    def local_gold(path: str, *args, **kwargs):
        return load_dataset(str(gold) if path == "ai-forever/MERA" else path, *args, **kwargs)

    datasets.load_dataset = local_gold
    os.chdir(scoring)  # its configs and log folders are relative to it
    sys.path.insert(0, str(scoring))
    package = types.ModuleType("src.tasks")  # its __init__ would import every task's module
    package.__spec__ = importlib.machinery.ModuleSpec("src.tasks", None)
    package.__path__ = [str(scoring / "src" / "tasks")]
    sys.modules["src.tasks"] = package
    importlib.import_module("src")
    for name in SHARED:
        importlib.import_module(f"src.tasks.{name}")
    from src.registry import get_all_tasks

    package.get_all_tasks = get_all_tasks
    from src.worker import Worker

    worker = Worker(conf="configs/main.yaml")
    errors = worker.load()
    if errors:
        raise SystemExit(f"MERA's scorer could not load the gold: {json.dumps(errors, ensure_ascii=False)[:2000]}")
    with tempfile.TemporaryDirectory() as scratch:  # it unpacks the zip beside it
        copy = Path(scratch) / "submission.zip"
        shutil.copy(submission, copy)
        return worker.evaluate(local_path=str(copy), remove_local_file=False)


def compare(response: dict, run_dir: Path) -> list[dict]:
    """Each metric MERA's scorer gives beside rueval's value (results.json: percentages)."""
    rueval_tasks = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["tasks"]
    rows = []
    for module, (task, names) in SHARED.items():
        scored = next((v for k, v in response["results"].items() if k.lower() == module), None)
        if scored is None:
            continue
        for metric, ours in names.items():
            theirs, mine = float(scored[metric]), rueval_tasks[task]["metrics"][ours] / 100
            rows.append({"task": task, "mera_metric": metric, "rueval_metric": ours, "mera": theirs, "rueval": mine,
                         "equal": abs(theirs - mine) <= TOLERANCE})  # fmt: skip
    return rows


def main() -> None:
    scoring, gold, submission, run_dir, out = map(Path, sys.argv[1:6])
    scoring, gold, submission, run_dir, out = (p.resolve() for p in (scoring, gold, submission, run_dir, out))
    response = mera_scores(scoring, gold, submission)
    rows = compare(response, run_dir)
    report = {"status": response["status"], "errors": response.get("error_reason", {}), "metrics": rows}
    out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    for row in rows:
        mark = "=" if row["equal"] else "DIFFERS"
        print(f"{row['task']:13} {row['mera_metric']:9} MERA {row['mera']:.6f}  rueval {row['rueval']:.6f}  {mark}")
    scored_all = len({row["task"] for row in rows}) == len(SHARED)
    if response.get("error_reason") or not scored_all or not all(row["equal"] for row in rows):
        print(f"MERA's scorer: status {response['status']}, errors {report['errors']}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
