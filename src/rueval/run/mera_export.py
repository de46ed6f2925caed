"""`rueval export --format mera RUN_DIR`: MERA's submission zip, one `<Task>.json` per task the run scored
on MERA's data, each `{"data": {"test": [{"outputs": ..., "meta": {"id": ...}}]}}` as MERA's official
sample submission writes them: RCB "1"/"2"/"3", PARus "1"/"2", RWSD "Да"/"Нет", ruWorldTree and
ruOpenBookQA a letter, CheGeKa the answer text, MultiQ one answer span of the main text
(`{"label": "passage", "length", "offset", "segment"}`, offset -1 when the text does not hold it) with
the record's `bridge_answers` in its meta.

The test predictions are the run's own when it scored MERA's test split; otherwise (MERA's test
answers are hidden) the run's solver, made again from its saved spec (OUT/run.json), predicts the
test split with the run's settings (seed, solver options, the first k of its shots, episode 0).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rueval.data import TaskData, check_written_ids, in_split_order, load_train, submission_ids
from rueval.data.mera import ANSWERS, MERA_TASKS, MeraSource
from rueval.errors import RuevalError
from rueval.files import atomic_path
from rueval.results import RunResult
from rueval.results.run import read_predictions
from rueval.run.predict import predict_tasks
from rueval.run.store import RunStore
from rueval.solvers import Setting
from rueval.tasks import Example, Task, get_task


def mera_entries(task: Task, examples: Sequence[Example], predictions: Sequence[Any]) -> list[dict[str, Any]]:
    """The `data.test` list of the task's submission file."""
    entries = []
    for example, prediction in zip(examples, predictions, strict=True):
        meta: dict[str, Any] = {"id": example.idx}
        if task.name == "multiq":
            segment = str(prediction)
            offset = example.fields["main_text"].find(segment) if segment else -1
            outputs: Any = [{"label": "passage", "length": len(segment), "offset": offset, "segment": segment}]
            meta["bridge_answers"] = example.fields.get("bridge_answers", [])
        elif task.name in ANSWERS:
            outputs = ANSWERS[task.name][prediction]
        else:
            outputs = str(prediction)
        entries.append({"outputs": outputs, "meta": meta})
    return entries


def export_mera(run_dir: Path, out: Path) -> dict[str, int]:
    """Write the submission zip of the MERA tasks in the run at ``run_dir``; returns entries per file."""
    run = RunResult.read(run_dir)
    if run.partial:
        raise RuevalError(f"{run_dir}: a --limit run scored part of each split; MERA needs every test example")
    scored = {name: result for name, result in run.tasks.items() if name in MERA_TASKS}
    if not scored:
        raise RuevalError(f"{run_dir}: scored none of the MERA tasks rueval shares ({', '.join(MERA_TASKS)})")
    roots = {_mera_root(run_dir, name, result.data.get("file")) for name, result in scored.items()}
    if len(roots) > 1:
        raise RuevalError(f"{run_dir}: its MERA tasks come from several folders: {', '.join(map(str, roots))}")
    source = MeraSource(roots.pop())
    tests = {name: source.load(get_task(name), "test") for name in scored}
    stored = {
        name: read_predictions(get_task(name), run_dir / "predictions" / f"{name}.jsonl")
        for name, result in scored.items()
        if result.split == "test"
    }
    predictions = {
        name: in_split_order(tests[name], [row.idx for row in rows], [row.prediction for row in rows])
        for name, rows in stored.items()
    }
    to_predict = [(get_task(name), TaskData(tests[name], load_train(source, get_task(name)))) for name in scored]
    to_predict = [(task, data) for task, data in to_predict if task.name not in predictions]
    if to_predict:
        predictions |= _predict(run_dir, to_predict)
    files = {
        f"{MERA_TASKS[name]}.json": {
            "data": {"test": mera_entries(get_task(name), tests[name].examples, predictions[name])}
        }
        for name in scored
    }
    for name in scored:
        check_written_ids(tests[name], submission_ids(files[f"{MERA_TASKS[name]}.json"]["data"]["test"]))
    with atomic_path(out) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, document in files.items():
            archive.writestr(name, json.dumps(document, ensure_ascii=False, indent=4))
    return {name: len(document["data"]["test"]) for name, document in files.items()}


def _mera_root(run_dir: Path, task: str, file: str | None) -> Path:
    """The MERA folder a task's data came from: its file is <root>/<Task>/task.json#data.<split>."""
    path = Path(file.split("#", 1)[0]) if file and "#data." in file else None
    if path is None or not path.is_file():
        raise RuevalError(f"{run_dir}: {task} was not read from MERA's task files (--data MERA_FOLDER), or they moved")
    return path.parent.parent


def _predict(run_dir: Path, pending: list[tuple[Task, TaskData]]) -> dict[str, list[Any]]:
    spec = RunStore(run_dir).load_spec()
    solver = spec.solver(run_dir.resolve() / "finetune")  # a fine-tuned run's models are reused
    return {p.task.name: p.headline for p in predict_tasks(solver, pending, [Setting(spec.shots[0])])}
