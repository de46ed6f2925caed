"""`rueval export --format mera RUN_DIR`: MERA's submission zip, one `<Task>.json` per task the run
scored or predicted on MERA's data, each `{"data": {"test": [{"outputs": ..., "meta": {"id": ...}}]}}`
as MERA writes them (MERA-Evaluation/MERA scripts/log_to_submission.py; ai-forever/MERA's sample
submission): RCB "1"/"2"/"3", PARus "1"/"2", RWSD "Да"/"Нет", ruWorldTree and ruOpenBookQA a letter,
CheGeKa the answer text (and MERA's generative tasks as rueval.data.mera_generative_tasks writes
them: the answer text, USE's with its question's number and variant, the code tasks' each sample's
test results); MultiQ in the shape of the test records' own outputs: the answer text
(MERA-evaluation/MERA's files), or one answer span of the main text (`{"label": "passage", "length",
"offset", "segment"}`, offset -1 when the text does not hold it) with the record's `bridge_answers`
in its meta (ai-forever/MERA's task files).

The test predictions are the run's own when it predicted MERA's test split (scored, or predict-only);
otherwise (a run that scored validation) the run's solver, made again from its saved spec
(OUT/run.json), predicts the test split with the run's settings (seed, solver options, its first
setting of demonstrations). Every test id is written once, checked before the zip is.

Only what the run computed is shipped: the run's own predictions must match the checksums its run.json
records, and MERA's files the checksum of the data they were computed from (tasks/<task>.json); an
edited file is an error naming it and what to rerun, as is a prediction that is none of the task's
answers.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.files import atomic_path
from rueval.data import TaskData, check_written_ids, in_split_order, is_mera_folder, load_train
from rueval.data.mera import MeraSource
from rueval.data.mera_choice_tasks import CHOICE_TASKS
from rueval.data.mera_generative_tasks import GENERATIVE, submission_entry
from rueval.data.mera_tasks import ANSWERS, MERA_TASKS, RECORD_FIELD
from rueval.results import PredictionRow, RunResult, TaskResult
from rueval.run.mera_choice_export import choice_entry, written_id
from rueval.run.predict import predict_tasks
from rueval.run.spec import RunSpec
from rueval.run.store import RunStore
from rueval.tasks import Example, Task, get_task


def mera_entries(task: Task, examples: Sequence[Example], predictions: Sequence[Any]) -> list[dict[str, Any]]:
    """The `data.test` list of the task's submission file."""
    return [_entry(task, example, prediction) for example, prediction in zip(examples, predictions, strict=True)]


def _entry(task: Task, example: Example, prediction: Any) -> dict[str, Any]:
    if task.name in CHOICE_TASKS:  # MERA's choice and classification tasks of its own
        return choice_entry(task.name, example, prediction)
    if task.name in GENERATIVE:
        return submission_entry(task.name, example.fields, example.idx, prediction)
    meta: dict[str, Any] = {"id": example.idx}
    if task.name in ANSWERS:
        return {"outputs": ANSWERS[task.name][prediction], "meta": meta}
    if task.name != "multiq" or not isinstance((example.fields.get(RECORD_FIELD) or {}).get("outputs"), list):
        return {"outputs": str(prediction), "meta": meta}
    segment = str(prediction)
    offset = example.fields["main_text"].find(segment) if segment else -1
    meta["bridge_answers"] = example.fields.get("bridge_answers", [])
    return {
        "outputs": [{"label": "passage", "length": len(segment), "offset": offset, "segment": segment}],
        "meta": meta,
    }


def export_mera(run_dir: Path, out: Path) -> dict[str, int]:
    """Write the submission zip of the MERA tasks in the run at ``run_dir``; returns entries per file."""
    run = RunResult.read(run_dir)
    if run.partial:
        raise RuevalError(f"{run_dir}: a --limit run scored part of each split; MERA needs every test example")
    done = {name: result for name, result in {**run.tasks, **run.predicted}.items() if name in MERA_TASKS}
    if not done:
        raise RuevalError(f"{run_dir}: scored none of the MERA tasks rueval shares ({', '.join(MERA_TASKS)})")
    store = RunStore(run_dir)
    spec = store.load_spec()
    if spec.data is None or not is_mera_folder(Path(spec.data)):
        raise RuevalError(f"{run_dir}: was not run on MERA's task files (--data MERA_FOLDER), or they moved")
    source = MeraSource(Path(spec.data))
    data = {name: TaskData(source.load(get_task(name), "test"), load_train(source, get_task(name))) for name in done}
    tests = {name: task_data.eval for name, task_data in data.items()}
    predictions = {
        name: in_split_order(tests[name], [row.idx for row in rows], [row.prediction for row in rows])
        for name, rows in _stored(store, done, data).items()
    }
    pending = [(get_task(name), data[name]) for name in done if name not in predictions]
    if pending:
        predictions |= _predict(run_dir, spec, pending)
    files = {
        f"{MERA_TASKS[name]}.json": {
            "data": {"test": mera_entries(get_task(name), tests[name].examples, predictions[name])}
        }
        for name in done
    }
    for name in done:
        check_written_ids(
            tests[name], [written_id(entry) for entry in files[f"{MERA_TASKS[name]}.json"]["data"]["test"]]
        )
    with atomic_path(out) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, document in files.items():
            archive.writestr(name, json.dumps(document, ensure_ascii=False, indent=4))
    return {name: len(document["data"]["test"]) for name, document in files.items()}


def _stored(store: RunStore, done: dict[str, TaskResult], data: dict[str, TaskData]) -> dict[str, list[PredictionRow]]:
    """The run's own predictions of the test split, for the tasks it ran on test, as it computed them."""
    tested = [name for name, result in done.items() if result.split == "test"]
    return {name: store.computed(get_task(name), data[name], done[name]) for name in tested}


def _predict(run_dir: Path, spec: RunSpec, pending: list[tuple[Task, TaskData]]) -> dict[str, list[Any]]:
    solver = spec.solver(run_dir.resolve() / "finetune")  # a fine-tuned run's models are reused
    return {p.task.name: p.headline for p in predict_tasks(solver, pending, lambda task: spec.settings(task)[:1])}
