"""The RussianSuperGLUE leaderboard submission: one <Task>.jsonl per task, zipped, each line shaped
as in the official sample submission (RussianNLP/RussianSuperGLUE, sample_submission.zip).

Every task but MuSeRC has one flat ``{"idx", "label"}`` line per example; for RuCoS that is one per
query, with the query's idx. MuSeRC nests answers under their question and passage. Labels as the
sample writes them: strings for NLI labels, ints for PARus and MuSeRC, "true"/"false" for RUSSE and
DaNetQA, "True"/"False" for RWSD, the entity text for RuCoS.

Two ways to it: `rueval submit` predicts the test sets now (``write_submission``); `rueval export
--format rsg` ships a run's own test predictions (``export_rsg``), as the run computed them.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.files import atomic_path
from rueval.data import (
    DataSource,
    Split,
    TaskData,
    check_written_ids,
    in_split_order,
    load_train,
    open_data,
    submission_ids,
)
from rueval.results import RunResult
from rueval.run.predict import predict_tasks
from rueval.run.spec import RunSpec
from rueval.run.store import RunStore
from rueval.tasks import RSG, Example, Task, get_task
from rueval.tasks.shapes import AnswerCheck


def submission_lines(task: Task, examples: Sequence[Example], preds: Sequence[Any]) -> list[dict[str, Any]]:
    labels = [task.submission_label(p) for p in preds] if task.submission_label else list(preds)
    if isinstance(task.shape, AnswerCheck):  # MuSeRC: answers nested as its records nest them
        return _muserc_lines(examples, labels)
    return [{"idx": _own_idx(e.idx), "label": label} for e, label in zip(examples, labels, strict=True)]


def _own_idx(idx: Any) -> Any:
    """An example's own idx: a RuCoS query's, not its passage's."""
    return idx[-1] if isinstance(idx, tuple) else idx


def _muserc_lines(examples: Sequence[Example], labels: Sequence[Any]) -> list[dict[str, Any]]:
    """Answers grouped under their question and passage, in input order."""
    passages: dict[Any, dict[str, Any]] = {}
    for example, label in zip(examples, labels, strict=True):
        passage_idx, question_idx, answer_idx = example.idx
        line = passages.setdefault(passage_idx, {"idx": passage_idx, "passage": {"questions": []}})
        questions = line["passage"]["questions"]
        if not questions or questions[-1]["idx"] != question_idx:
            questions.append({"idx": question_idx, "answers": []})
        questions[-1]["answers"].append({"idx": answer_idx, "label": label})
    return list(passages.values())


def write_submission(spec: RunSpec, out: Path) -> dict[str, int]:
    """Predict the test set of every task of ``spec`` (RSG's) and write the leaderboard zip
    (`rueval submit`); returns lines written per file. A language model answers with the
    spec's first number of shots (episode 0). The solver learns from train and val together (label
    priors from both, as the heuristics paper's submissions took them)."""
    source = open_data(spec.data, spec.read_limits, spec.tape_set)
    pending = [(task, TaskData(source.load(task, "test"), _train_and_val(source, task))) for task in spec.task_list]
    solver = spec.solver()  # once the data is read and checked: bad data fails before a model loads
    files = {
        f"{p.task.folder}.jsonl": _task_file(p.task, p.data.eval, p.headline)
        for p in predict_tasks(solver, pending, lambda task: spec.settings(task)[:1])
    }
    return _write_zip(out, files)


def export_rsg(run_dir: Path, out: Path) -> dict[str, int]:
    """`rueval export --format rsg` (``RSG.submission``): the leaderboard zip of the RSG tasks a run
    predicted on test (``rueval run -t rsg --split test --predict-only``: the official tests have no
    answers), each as the run computed it (``RunStore.computed``); returns lines written per file."""
    run = RunResult.read(run_dir)
    if run.partial:
        raise RuevalError(f"{run_dir}: a --limit run predicted part of each split; the board needs every test item")
    done = {name: result for name, result in {**run.tasks, **run.predicted}.items() if result.benchmark == RSG.name}
    if not done:
        raise RuevalError(f"{run_dir}: has none of RSG's tasks")
    if other := [f"{name} ({result.split})" for name, result in done.items() if result.split != "test"]:
        raise RuevalError(
            f"{run_dir}: predicted {', '.join(other)}, not the test split; run the RSG tasks with "
            "--split test --predict-only, or predict the tests with rueval submit"
        )
    store = RunStore(run_dir)
    spec = store.load_spec()
    source = open_data(spec.data, spec.read_limits, spec.tape_set)
    files = {}
    for name, result in done.items():
        task = get_task(name)
        data = TaskData(source.load(task, "test"), load_train(source, task))
        rows = store.computed(task, data, result)
        predictions = in_split_order(data.eval, [row.idx for row in rows], [row.prediction for row in rows])
        files[f"{task.folder}.jsonl"] = _task_file(task, data.eval, predictions)
    return _write_zip(out, files)


def _task_file(task: Task, test: Split, predictions: Sequence[Any]) -> str:
    """A task's <Task>.jsonl, every test id written once (checked)."""
    lines = submission_lines(task, test.examples, predictions)
    check_written_ids(test, submission_ids(lines))
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _write_zip(out: Path, files: dict[str, str]) -> dict[str, int]:
    with atomic_path(out) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return {name: text.count("\n") for name, text in files.items()}


def _train_and_val(source: DataSource, task: Task) -> Split | None:
    """The task's train split with its labelled val examples added (LiDiRus: TERRa's train)."""
    train = load_train(source, task)
    if train is None or not source.has_split(task, "val"):
        return train
    val = source.load(task, "val")
    return replace(train, examples=[*train.examples, *(e for e in val.examples if e.label is not None)])
