"""A run directory and what lives in it: OUT/run.json (the run's spec, with the model's identity and
rueval's version, for --resume), OUT/tasks/<task>.json (each finished task, with the fingerprint of
everything its score depends on), OUT/predictions/<task>.jsonl, OUT/results.json and, when asked
for, OUT/samples/samples_<task>_<date id>.jsonl (the sample logs, named as lm-eval names them).

A finished task whose fingerprint matches is reused as it was, so an interrupted run resumes where
it stopped. A directory that holds another run's results (other settings) is never overwritten
silently: the run stops before any work unless told to replace them (``force``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rueval.data import TaskData
from rueval.errors import DataError, RuevalError
from rueval.files import write_json, write_jsonl
from rueval.results import Checker, PredictionRow, RunResult, TaskResult, read_json_file, write_predictions
from rueval.results.lm_eval import SAMPLES_DIR, sample_file, sample_files
from rueval.run.spec import RunSpec, digest, read_spec, scored
from rueval.tasks import Task

SPEC_FILE = "run.json"
RESOLVED = ("model_identity", "rueval_version")  # what a run records in run.json beside its spec


class RunStore:
    def __init__(self, out: Path):
        self.out = Path(out)
        self.notes: list[str] = []  # what the store did that the user should know (printed by the CLI)

    # -- the run's spec, for --resume ----------------------------------------------------------------
    def save_spec(self, settings: Mapping[str, Any]) -> None:
        """``settings``: the spec's JSON and the values the run resolved (RESOLVED)."""
        write_json(self.out / SPEC_FILE, dict(settings))

    def load_spec(self) -> RunSpec:
        """The spec of the run in this directory; a user error if there is none or it is damaged."""
        path = self.out / SPEC_FILE
        if not path.is_file():
            raise RuevalError(f"{path}: not found; --resume continues a run started with rueval run -o {self.out}")
        return read_spec(path, RESOLVED)

    # -- another run's results in the directory --------------------------------------------------------
    def claim(self, settings: Mapping[str, Any], tasks: Sequence[str], force: bool) -> dict[str, TaskResult]:
        """Make the directory this run's before any work. Returns the earlier results of the same
        settings for tasks this run does not score (merged into its results.json, and said so);
        another run's results stop the run, unless ``force`` replaces them."""
        earlier = self._earlier_settings()
        if earlier is not None and scored(earlier) != scored(settings):
            if not force:
                differences = _differences(scored(earlier), scored(settings))
                raise RuevalError(
                    f"{self.out}: holds the results of another run ({differences}); "
                    "give a new -o, or --force to replace them"
                )
            for name in ("tasks", "predictions", SAMPLES_DIR):
                shutil.rmtree(self.out / name, ignore_errors=True)
            (self.out / "results.json").unlink(missing_ok=True)
            self.notes.append(f"replaced the results of another run in {self.out} (--force)")
            return {}
        if earlier is None or not (self.out / "results.json").is_file():
            return {}
        previous = RunResult.read(self.out)
        kept = {name: result for name, result in previous.tasks.items() if name not in tasks}
        if kept:
            self.notes.append(f"kept {len(kept)} task(s) of the earlier run with the same settings: {', '.join(kept)}")
        return kept

    def _earlier_settings(self) -> dict[str, Any] | None:
        """The settings of the run in the directory: its run.json, else its results.json."""
        results, spec = self.out / "results.json", self.out / SPEC_FILE
        if self.out.exists() and not self.out.is_dir():
            raise RuevalError(f"-o {self.out}: is a file, not a directory")
        try:
            if spec.is_file():
                return dict(Checker(str(spec)).obj(read_json_file(spec), ""))
            if results.is_file():
                return RunResult.read(self.out).settings
        except DataError as e:
            raise RuevalError(f"{e}; give a new -o, or --force to replace the run in {self.out}") from None
        return None

    # -- finished tasks ----------------------------------------------------------------------------------
    def stored(self, task: Task, fingerprint: str) -> TaskResult | None:
        """The task's saved result if it was computed with the same fingerprint. A damaged file is
        reported (in ``notes``) and the task computed again."""
        path = self._task_file(task)
        if not path.is_file():
            return None
        try:
            result = TaskResult.read(path)
        except DataError as e:
            self.notes.append(f"{e}; computing {task.name} again")
            return None
        return result if result.fingerprint == fingerprint else None

    def record(
        self, task: Task, result: TaskResult, rows: list[PredictionRow], samples: list[dict[str, Any]] | None = None
    ) -> None:
        """Write the task's predictions (and sample log, named as lm-eval names its own), then its result: a
        result on disk always has its predictions. An earlier log would no longer match the predictions."""
        write_predictions(self.out / "predictions" / f"{task.name}.jsonl", rows)
        for earlier in sample_files(self.out, task.name):
            earlier.unlink()
        if samples is not None:
            write_jsonl(sample_file(self.out, task.name, datetime.now()), samples)
        result.write(self._task_file(task))

    def has_samples(self, task: Task) -> bool:
        return bool(sample_files(self.out, task.name))

    def write_results(self, results: RunResult) -> None:
        results.write(self.out)

    def _task_file(self, task: Task) -> Path:
        return self.out / "tasks" / f"{task.name}.json"


def fingerprint(run_key: Mapping[str, Any], task: Task, data: TaskData) -> str:
    """A hash of everything a task's result depends on: the run's (``run_key``), the task, its scored
    split and its data."""
    key = {**run_key, "task": task.name, "split": data.eval.name, "data": data.sha256}
    if task.revision:  # a task declared in a YAML file: an edited file is another task
        key["task_revision"] = task.revision
    return digest(key)


def _differences(earlier: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """The settings that differ, briefly: "model majority -> tfidf, slices [] -> ['length']"."""
    changed = [key for key in dict.fromkeys([*earlier, *settings]) if earlier.get(key) != settings.get(key)]
    return ", ".join(f"{key} {earlier.get(key)!r:.40} -> {settings.get(key)!r:.40}" for key in changed[:3])
