"""A run directory and what lives in it: OUT/run.json (the run's spec, with the model's identity and
rueval's version, for --resume, and the checksum of every file each finished task wrote),
OUT/tasks/<task>.json (each finished task, with the fingerprint of everything its score depends on),
OUT/predictions/<task>.jsonl, OUT/results.json with its lm-eval twin and, when asked for,
OUT/samples/samples_<task>_<date id>.jsonl (the sample logs, named as lm-eval names them).

A finished task is committed when run.json records its files' checksums, after they are written:
a task whose files are missing, edited or were never recorded (a write that failed halfway, a kill
between two files) is computed again, and the run says so; one whose fingerprint matches is reused as
it was, so an interrupted run resumes where it stopped. The summary files are written together (both
or neither). A directory that holds another run's results (other settings), or an unfinished run
whose tasks this run would drop from its --resume, is never overwritten silently: the run stops
before any work unless told to replace them (``force``); a directory that holds anything else is
never used. A run refused before any of its tasks finished leaves the directory as it found it.

``-o FILE.json`` is lm-eval's file form of --output_path: the run directory is then FILE without
.json, and lm-eval's results are also written as lm-eval writes them, to FILE_<date id>.json in
FILE's folder; never a directory named FILE.json.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rueval import __version__
from rueval.core.errors import DataError, RuevalError
from rueval.core.files import atomic_path, write_json, write_json_files, write_jsonl
from rueval.data import TaskData
from rueval.results import Checker, PredictionRow, RunResult, TaskResult, read_json_file, write_predictions
from rueval.results.lm_eval import FILE_NAME as LM_EVAL_FILE
from rueval.results.lm_eval import SAMPLES_DIR, results_file, sample_file, sample_files
from rueval.results.run import read_predictions
from rueval.run.spec import RunSpec, digest, read_spec, scored
from rueval.tasks import Task

SPEC_FILE = "run.json"
FILES = "files"  # run.json: task -> {file, relative to OUT: its SHA-256}, each task's commit record
# what a run records in run.json beside its spec
RESOLVED = ("model_identity", "generation_mode", "rueval_version", FILES)
RUN_MARKS = (SPEC_FILE, "results.json")  # a directory holding either is a rueval run


def resolved_settings(spec: RunSpec, solver: Any) -> dict[str, Any]:
    """The spec's JSON with what the run resolved: the model's exact identity (an LM's weights: a changed
    model recomputes), how it generates (`hf:`'s texts depend on it; left out for models whose texts do
    not), and rueval's version."""
    settings = {**spec.to_json(), "model_identity": getattr(solver, "identity", spec.model)}
    engine = getattr(solver, "engine", None)  # a language model's
    if engine is not None and (mode := engine.model.generation_mode) is not None:
        settings["generation_mode"] = mode
    return {**settings, "rueval_version": __version__}


class RunStore:
    def __init__(self, out: Path):
        self.out = run_folder(Path(out))
        self.lm_eval_file = Path(out) if self.out != Path(out) else None  # --output_path FILE.json
        self.notes: list[str] = []  # what the store did that the user should know (printed by the CLI)
        self.files: dict[str, dict[str, str]] = {}  # FILES: the finished tasks' files and their checksums
        self._settings: dict[str, Any] = {}
        self._found: tuple[bool, bytes | None] | None = None  # claim: whether OUT was there, and its run.json
        self._recorded = False  # a task of this run finished
        try:
            self.out.exists()
        except OSError as e:  # a name too long, a folder that cannot be searched
            raise RuevalError(f"-o {self.out}: cannot be used ({e.strerror or e})") from None

    # -- the run's spec, for --resume ----------------------------------------------------------------
    def save_spec(self, settings: Mapping[str, Any]) -> None:
        """``settings``: the spec's JSON and the values the run resolved (RESOLVED); the finished tasks'
        checksums are written with them."""
        self._settings = {key: value for key, value in settings.items() if key != FILES}
        write_json(self.out / SPEC_FILE, {**self._settings, FILES: self.files})

    def load_spec(self) -> RunSpec:
        """The spec of the run in this directory; a user error if there is none or it is damaged."""
        path = self.out / SPEC_FILE
        if not (path.exists() or path.is_symlink()):  # anything else of its name is refused as it is read
            raise RuevalError(f"{path}: not found; --resume continues a run started with rueval run -o {self.out}")
        spec = read_spec(path, RESOLVED)
        self.files = _checksums(Checker(str(path)), read_json_file(path).get(FILES) or {})
        return spec

    # -- another run's results in the directory --------------------------------------------------------
    def claim(self, settings: Mapping[str, Any], tasks: Sequence[str], force: bool) -> dict[str, TaskResult]:
        """Make the directory this run's before any work. Returns the earlier results of the same
        settings for tasks this run does not score (merged into its results.json, and said so);
        another run's results, or a damaged run.json, stop the run unless ``force`` replaces them."""
        self.check_folder()
        spec = self.out / SPEC_FILE
        self._found = (self.out.exists(), spec.read_bytes() if spec.is_file() else None)
        try:
            earlier = self._earlier_settings()
        except RuevalError:
            if not force:
                raise
            earlier = {}  # damaged: replaced as another run's
        recorded = None if earlier is None else scored({k: v for k, v in earlier.items() if k != FILES})
        if recorded is not None and recorded != scored(settings):
            if not force:
                differences = settings_differences(recorded, scored(settings))
                raise RuevalError(
                    f"{self.out}: holds the results of another run ({differences}); "
                    "give a new -o, or --force to replace them"
                )
            for name in ("tasks", "predictions", SAMPLES_DIR):
                shutil.rmtree(self.out / name, ignore_errors=True)
            for name in ("results.json", LM_EVAL_FILE):
                (self.out / name).unlink(missing_ok=True)
            self.notes.append(f"replaced the results of another run in {self.out} (--force)")
            return {}
        self.files = dict(earlier.get(FILES) or {}) if earlier else {}
        if earlier is None:
            return {}
        previous = RunResult.read(self.out) if (self.out / "results.json").is_file() else None
        earlier_tasks = {**previous.tasks, **previous.predicted} if previous else {}
        self._keep_unfinished(earlier["tasks"], earlier_tasks, tasks, force)
        if previous is None:
            return {}
        kept = {name: result for name, result in earlier_tasks.items() if name not in tasks}
        if kept:
            self.notes.append(f"kept {len(kept)} task(s) of the earlier run with the same settings: {', '.join(kept)}")
        return kept

    def _keep_unfinished(
        self, recorded: Sequence[str], finished: Mapping[str, Any], tasks: Sequence[str], force: bool
    ) -> None:
        """--resume continues the tasks run.json lists: a run of other tasks (same settings) in the folder
        of an unfinished run would drop that run's unfinished tasks from it."""
        dropped = [task for task in recorded if task not in tasks and task not in finished]
        if not dropped:
            return
        shown = ", ".join(dropped[:5]) + (", ..." if len(dropped) > 5 else "")
        if not force:
            raise RuevalError(
                f"{self.out}: holds an unfinished run whose {len(dropped)} other task(s) this run would drop "
                f"({shown}); continue it with rueval run --resume -o {self.out}, give a new -o, "
                "or --force to run these tasks in its place"
            )
        self.notes.append(f"dropped the unfinished task(s) of the earlier run in {self.out}: {shown} (--force)")

    def withdraw(self) -> None:
        """Undo the claim of a run refused before any of its tasks finished: run.json as it was (or
        none), OUT removed if the run made it and it is empty. The refused run writes nothing, and the
        corrected one is not taken for another run."""
        if self._found is None or self._recorded:
            return  # not claimed here, or a task finished: finished work is kept
        existed, spec = self._found
        if spec is not None:
            with atomic_path(self.out / SPEC_FILE) as tmp:
                tmp.write_bytes(spec)
            return
        (self.out / SPEC_FILE).unlink(missing_ok=True)
        if not existed and self.out.is_dir() and not any(self.out.iterdir()):
            self.out.rmdir()

    def check_folder(self) -> None:
        """OUT is a folder that is empty, not there yet, or a rueval run's: never a user's own files."""
        if not self.out.exists():
            return
        if not self.out.is_dir():
            raise RuevalError(f"-o {self.out}: is a file, not a directory")
        entries = sorted(entry.name for entry in self.out.iterdir())
        if entries and not any(name in entries for name in RUN_MARKS):
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise RuevalError(
                f"-o {self.out}: holds files that are not a rueval run ({shown}); give an empty or new -o"
            )

    def _earlier_settings(self) -> dict[str, Any] | None:
        """The settings of the run in the directory: its run.json, checked as --resume reads it (whatever
        has its name: a folder or a pipe is no run.json). A damaged one, or none beside a results.json
        (nothing then records the settings or the files), is an error naming it."""
        results, spec = self.out / "results.json", self.out / SPEC_FILE
        try:
            if spec.exists() or spec.is_symlink():
                read_spec(spec, RESOLVED)
                earlier = dict(Checker(str(spec)).obj(read_json_file(spec), ""))
                return {**earlier, FILES: _checksums(Checker(str(spec)), earlier.get(FILES) or {})}
            if results.exists():
                raise RuevalError(f"{spec}: missing beside {results.name} (it records the run's settings and files)")
        except RuevalError as e:
            raise RuevalError(f"{e}; give a new -o, or --force to replace the run in {self.out}") from None
        return None

    # -- finished tasks ----------------------------------------------------------------------------------
    def stored(self, task: Task, fingerprint: str) -> TaskResult | None:
        """The task's saved result if it was computed with the same fingerprint and its files are as the
        run wrote them. A missing, edited or damaged file is reported (in ``notes``) and the task
        computed again."""
        path = self._task_file(task)
        if not path.is_file() and task.name not in self.files:
            return None
        problem = self._changed(task.name)
        if problem:
            self.notes.append(f"{problem}; computing {task.name} again")
            return None
        try:
            result = TaskResult.read(path)
        except DataError as e:
            self.notes.append(f"{e}; computing {task.name} again")
            return None
        return result if result.fingerprint == fingerprint else None

    def _changed(self, task: str) -> str | None:
        """What differs from the task's commit record: a file missing or edited, or no record at all."""
        recorded = self.files.get(task)
        if not recorded:
            return f"{self.out / 'tasks' / f'{task}.json'}: not recorded in {SPEC_FILE} (an unfinished write)"
        for name, checksum in recorded.items():
            file = self.out / name
            if not file.is_file():
                return f"{file}: missing"
            if _sha256(file) != checksum:
                return f"{file}: changed since the run wrote it"
        return None

    def record(
        self, task: Task, result: TaskResult, rows: list[PredictionRow], samples: list[dict[str, Any]] | None = None
    ) -> None:
        """Write the task's predictions (and sample log, named as lm-eval names its own) and its result,
        then commit them: run.json records their checksums. A kill or a failed write before the commit
        leaves the task to compute again; after it, the task is finished. An earlier log would no longer
        match the predictions."""
        self.files.pop(task.name, None)
        written = [self.out / "predictions" / f"{task.name}.jsonl", self._task_file(task)]
        write_predictions(written[0], rows)
        for earlier in sample_files(self.out, task.name):
            earlier.unlink()
        if samples is not None:
            written.append(sample_file(self.out, task.name, datetime.now()))
            write_jsonl(written[-1], samples)
        result.write(written[1])
        self.files[task.name] = {str(file.relative_to(self.out)): _sha256(file) for file in written}
        self.save_spec(self._settings)
        self._recorded = True

    def has_samples(self, task: Task) -> bool:
        return bool(sample_files(self.out, task.name))

    def write_results(self, results: RunResult, lm_eval: Mapping[str, Any]) -> None:
        """results.json and its lm-eval twin (and for -o FILE.json lm-eval's FILE_<date id>.json),
        together: a failed write leaves them as they were."""
        documents = self._lm_eval_documents(lm_eval)
        if self.lm_eval_file is not None:
            results.notes.append(f"lm-eval's results file: {list(documents)[-1]}")
        write_json_files({self.out / "results.json": results.to_json(), **documents})

    def write_lm_eval(self, document: Mapping[str, Any]) -> None:
        """A task-file run's lm-eval document, first (rueval.run.task_files): its scores are kept whatever
        happens to what rueval makes of them."""
        write_json_files(self._lm_eval_documents(document))

    def _lm_eval_documents(self, document: Mapping[str, Any]) -> dict[Path, Mapping[str, Any]]:
        """Where lm-eval's results document goes: OUT/results_lmeval.json, and lm-eval's own file for -o FILE.json."""
        documents = {self.out / LM_EVAL_FILE: document}
        if self.lm_eval_file is not None:
            documents[results_file(self.lm_eval_file, datetime.now())] = document
        return documents

    def computed(self, task: Task, data: TaskData, result: TaskResult) -> list[PredictionRow]:
        """A finished task's predictions, for an export to ship only what the run computed: its files as
        the run wrote them and its data as the run read it (the checksums run.json and tasks/<task>.json
        record; ``load_spec`` reads them), each prediction one of the task's labels. An error naming
        the file and what to rerun otherwise."""
        rerun = f"compute {task.name} again: rueval run --resume -o {self.out}"
        if problem := self._changed(task.name):
            raise RuevalError(f"{problem}; {rerun}")
        if result.data.get("sha256") != data.sha256:
            # a MERA task.json holds both splits: "task.json#data.test" names the split, not the file
            files = " or ".join(dict.fromkeys(split.file.split("#")[0] for split in (data.eval, data.train) if split))
            raise RuevalError(f"{files}: changed since the run computed {task.name}'s predictions from it; {rerun}")
        path = self.out / "predictions" / f"{task.name}.jsonl"
        rows = read_predictions(task, path)
        labels = task.labels if task.kind == "classification" else ()
        wrong = next((row for row in rows if labels and not _one_of(row.prediction, labels)), None)
        if wrong is not None:
            raise RuevalError(
                f"{path}: the prediction for id {wrong.idx!r:.40} is {wrong.prediction!r:.40}, none of "
                f"{task.name}'s answers ({', '.join(map(repr, labels))}); run the task again into a new -o"
            )
        return rows

    def _task_file(self, task: Task) -> Path:
        return self.out / "tasks" / f"{task.name}.json"


def fingerprint(run_key: Mapping[str, Any], task: Task, data: TaskData) -> str:
    """A hash of everything a task's result depends on: the run's (``run_key``), the task, its scored
    split and its data."""
    return digest({**run_key, "task": task.name, "split": data.eval.name, "data": data.sha256})


def run_folder(out: Path) -> Path:
    """The run directory ``-o OUT`` names: OUT, or for lm-eval's file form FILE.json, FILE without .json."""
    return out.with_suffix("") if out.suffix == ".json" else out


def _one_of(prediction: Any, labels: Sequence[Any]) -> bool:
    """Whether the prediction is one of the labels, of its type too (True is not 1)."""
    return any(prediction == label and type(prediction) is type(label) for label in labels)


def _checksums(check: Checker, value: Any) -> dict[str, dict[str, str]]:
    """run.json's FILES, checked: task -> {file: SHA-256}."""
    return {
        task: {
            name: check.text(sha, f"{FILES}.{task}.{name}") for name, sha in check.obj(files, f"{FILES}.{task}").items()
        }
        for task, files in check.obj(value, FILES).items()
    }


def _sha256(file: Path) -> str:
    with file.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def settings_differences(earlier: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """The settings that differ, each briefly, a nested one by its leaves: "seed 0 -> 5,
    solver_options.fallback 'majority' -> 'random'"; empty when none does."""
    changed = []
    for key in dict.fromkeys([*earlier, *settings]):
        before, after = earlier.get(key), settings.get(key)
        if isinstance(before, dict) and isinstance(after, dict):
            leaves = [leaf for leaf in dict.fromkeys([*before, *after]) if before.get(leaf) != after.get(leaf)]
            changed += [f"{key}.{leaf} {before.get(leaf)!r:.40} -> {after.get(leaf)!r:.40}" for leaf in leaves]
        elif before != after:
            changed.append(f"{key} {before!r:.60} -> {after!r:.60}")
    return ", ".join(changed)
