"""What a run writes: the run (results.json), each task's result (tasks/<task>.json) and a row per
scored example (predictions/<task>.jsonl), as typed records with to/from JSON that checks its input."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.core.files import write_json, write_jsonl
from rueval.data.local import decode_lines, parse_json_line
from rueval.results.checks import Checker, read_json_file
from rueval.results.robustness import RobustnessSummary
from rueval.results.scores import PromptScores, ShotResult
from rueval.tasks import TASKS, Example, Task
from rueval.tasks.mera_generative import Graded

INDUSTRIAL_FIELDS = ("examples_per_s", "latency_ms_per_example", "peak_rss_mb", "model_size_mb", "parameters")
SCALE = "metrics are percentages (x100), as in the papers"
LM_EVAL = "lm-eval"  # the benchmark of a task run from lm-eval's task files: its metrics are lm-eval's


# ---- per-example rows -------------------------------------------------------------------------------


def _tupled(value: Any) -> Any:
    """JSON turns tuples (nested idx paths, multilabel predictions, gold answers) into lists: turn them back."""
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class PredictionRow:
    """One scored example in predictions/<task>.jsonl: its idx, the prediction and the gold answer,
    and its group (the MuSeRC question; its EM and bootstrap resample whole questions)."""

    idx: Any
    prediction: Any
    gold: Any
    group: Any = None

    def to_json(self) -> dict[str, Any]:
        row = {"idx": self.idx, "prediction": self.prediction, "gold": self.gold}
        return row if self.group is None else {**row, "group": self.group}

    @classmethod
    def from_json(cls, task: Task, data: Mapping[str, Any], file: str, line: int) -> PredictionRow:
        for key in ("idx", "prediction", "gold"):
            if key not in data:
                raise DataError(file, "missing", line=line, field=key)
        row = cls(*(_tupled(data.get(key)) for key in ("idx", "prediction", "gold", "group")))
        for key, problem in (
            ("gold", _gold_problem(task, row.gold)),
            ("prediction", _prediction_problem(task, row.prediction)),
        ):
            if problem:
                raise DataError(file, problem, line=line, field=key)
        return row


def _gold_problem(task: Task, gold: Any) -> str | None:
    """Why a gold value cannot be the task's, or None (none: an example without answers, predicted)."""
    if gold is None or isinstance(task.shape, Graded):  # its scorer's shape, read by its scorer
        return None
    if task.kind == "span":
        if isinstance(gold, tuple) and gold and all(isinstance(g, str) for g in gold):
            return None
        return f"expected a list of answer strings, got {gold!r:.60}"
    if task.kind == "multilabel":
        return _prediction_problem(task, gold)
    if any(gold == label and type(gold) is type(label) for label in task.labels):
        return None
    return f"unknown label {gold!r:.60}; expected one of: {', '.join(map(repr, task.labels))}"


def _prediction_problem(task: Task, pred: Any) -> str | None:
    """Why a prediction cannot be scored, or None. Classification predictions outside the label
    space are scored (as wrong), as they were in the run."""
    if isinstance(task.shape, Graded):
        return None
    if task.kind == "span" and not isinstance(pred, str):
        return f"expected answer text, got {pred!r:.60}"
    if task.kind == "multilabel" and not (
        isinstance(pred, tuple) and len(pred) == len(task.categories) and all(v in (0, 1) for v in pred)
    ):
        return f"expected {len(task.categories)} values of 0 or 1, got {pred!r:.60}"
    if task.kind == "classification" and isinstance(pred, dict):
        return f"expected a label, got an object {pred!r:.60}"
    return None


def write_predictions(path: Path, rows: list[PredictionRow]) -> None:
    write_jsonl(path, (row.to_json() for row in rows))


def read_predictions(task: Task, path: Path) -> list[PredictionRow]:
    """A run's predictions/<task>.jsonl, every row checked."""
    if not path.is_file():
        raise RuevalError(f"{path}: missing; the run lists {task.name} but has no predictions for it")
    rows = [
        PredictionRow.from_json(task, parse_json_line(line, str(path), number), str(path), number)
        for number, line in enumerate(decode_lines(path.read_bytes(), str(path)), 1)
        if line.strip()
    ]
    if not rows:
        raise DataError(str(path), "has no predictions")
    return rows


def scored_examples(task: Task, run_dir: Path) -> tuple[list[Example], list[Any]]:
    """The scored examples (idx, gold and group, as the run stored them) and the predictions of a run."""
    path = run_dir / "predictions" / f"{task.name}.jsonl"
    rows = read_predictions(task, path)
    if task.nested and task.kind == "classification" and any(row.group is None for row in rows):
        raise DataError(
            str(path), "missing: rows need their question (written by an older rueval; run again)", field="group"
        )
    return [Example(idx=row.idx, fields={}, label=row.gold, group=row.group) for row in rows], [
        row.prediction for row in rows
    ]


# ---- a task's result ----------------------------------------------------------------------------------


@dataclass
class TaskResult:
    """Everything a run records for one task (OUT/tasks/<task>.json and results.json's tasks.<task>)."""

    benchmark: str  # whose files the task was read from: its own benchmark's, or another's (MERA's)
    split: str
    n: int  # examples scored (MuSeRC: answers, RuCoS: queries)
    score: float | None  # None: predicted, not scored (no answers, or --predict-only)
    metrics: dict[str, float]
    breakdown: dict[str, dict[str, float]] = field(default_factory=dict)
    ci: dict[str, list[float]] = field(default_factory=dict)
    industrial: dict[str, Any] = field(default_factory=dict)
    slices: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    shots: dict[int, ShotResult] = field(default_factory=dict)
    prompts: PromptScores | None = None  # --prompts all, a task its paper ran with several prompts
    perturbations: dict[str, dict[str, Any]] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    requests_computed: int | None = None
    protocol: str | None = None  # language models: how the task was scored, e.g. loglik-chat-template
    unmatched_answers: int | None = None  # generate-match: generated answers that named no option (scored wrong)
    wall_time_s: float = 0.0
    fingerprint: str = ""
    # records of the split read; an earlier rueval's file has none (read as n where a record is one example)
    records: int | None = None
    # a task file's: each metric's lm-eval aggregation (its name in lm-eval's registry; "" for the task's own
    # function), and for a group the tasks lm-eval aggregated into it
    aggregation: dict[str, str] = field(default_factory=dict)
    subtasks: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "benchmark": self.benchmark,
            "split": self.split,
            "n": self.n,
            "records": self.records,
            "score": self.score,
            "metrics": self.metrics,
            "breakdown": self.breakdown,
        }
        if self.shots:
            data["shots"] = {str(k): shot.to_json() for k, shot in self.shots.items()}
        if self.prompts is not None:
            data["prompts"] = self.prompts.to_json()
        if self.requests_computed is not None:
            data["requests_computed"] = self.requests_computed
        if self.protocol is not None:
            data["protocol"] = self.protocol
        if self.unmatched_answers is not None:
            data["unmatched_answers"] = self.unmatched_answers
        data.update({"ci": self.ci, "industrial": self.industrial})
        if self.slices:
            data["slices"] = self.slices
        data.update({"data": self.data, "wall_time_s": self.wall_time_s, "fingerprint": self.fingerprint})
        if self.aggregation:
            data["aggregation"] = self.aggregation
        if self.subtasks:
            data["subtasks"] = self.subtasks
        if self.perturbations:
            data["perturbations"] = self.perturbations
        if self.robustness is not None:  # derived from perturbations: written for readers, re-derived on reading
            data["robustness"] = self.robustness.to_json()
        return data

    @property
    def robustness(self) -> RobustnessSummary | None:
        """The worst perturbation and each one's share of test items left unchanged."""
        return RobustnessSummary.of(self.perturbations)

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str = "") -> TaskResult:
        data = check.obj(data, at.rstrip("."))
        ci = {}
        for metric, bounds in check.obj(data.get("ci", {}), f"{at}ci").items():
            if not (isinstance(bounds, list | tuple) and len(bounds) == 2):
                raise check.fail(f"{at}ci.{metric}", "expected two numbers, the low and high bounds")
            ci[metric] = [check.number(bound, f"{at}ci.{metric}[{i}]") for i, bound in enumerate(bounds)]
        shots = {}
        for k, shot in check.obj(data.get("shots", {}), f"{at}shots").items():
            if not k.isdigit():
                raise check.fail(f"{at}shots.{k}", "expected a number of shots as the key")
            shots[int(k)] = ShotResult.from_json(shot, check, f"{at}shots.{k}")
        perturbations = {}
        for name, attack in check.obj(data.get("perturbations", {}), f"{at}perturbations").items():
            where = f"{at}perturbations.{name}"
            attack = check.obj(attack, where)
            check.numbers(check.required(attack, "metrics", f"{where}."), f"{where}.metrics")
            for key in ("score", "asr"):
                check.number(attack.get(key), f"{where}.{key}", optional=True)
            perturbations[name] = dict(attack)
        slices = {
            name: {
                bucket: check.numbers(values, f"{at}slices.{name}.{bucket}")
                for bucket, values in check.obj(buckets, f"{at}slices.{name}").items()
            }
            for name, buckets in check.obj(data.get("slices", {}), f"{at}slices").items()
        }
        return cls(
            benchmark=check.text(data.get("benchmark", ""), f"{at}benchmark"),
            split=check.text(data.get("split", ""), f"{at}split"),
            n=int(check.number(check.required(data, "n", at), f"{at}n")),
            score=check.number(check.required(data, "score", at), f"{at}score", optional=True),
            metrics=check.numbers(check.required(data, "metrics", at), f"{at}metrics"),
            breakdown={
                tag: check.numbers(values, f"{at}breakdown.{tag}")
                for tag, values in check.obj(data.get("breakdown", {}), f"{at}breakdown").items()
            },
            ci=ci,
            industrial=_industrial(data.get("industrial", {}), check, f"{at}industrial"),
            slices=slices,
            shots=shots,
            prompts=PromptScores.from_json(data["prompts"], check, f"{at}prompts") if "prompts" in data else None,
            perturbations=perturbations,
            data=dict(check.obj(data.get("data", {}), f"{at}data")),
            requests_computed=data.get("requests_computed"),
            protocol=None if data.get("protocol") is None else check.text(data["protocol"], f"{at}protocol"),
            unmatched_answers=None
            if data.get("unmatched_answers") is None
            else int(check.number(data["unmatched_answers"], f"{at}unmatched_answers")),
            wall_time_s=check.number(data.get("wall_time_s", 0.0), f"{at}wall_time_s"),
            fingerprint=check.text(data.get("fingerprint", ""), f"{at}fingerprint"),
            records=None if data.get("records") is None else int(check.number(data["records"], f"{at}records")),
            aggregation={
                metric: check.text(how, f"{at}aggregation.{metric}")
                for metric, how in check.obj(data.get("aggregation", {}), f"{at}aggregation").items()
            },
            subtasks=[
                check.text(task, f"{at}subtasks[{i}]")
                for i, task in enumerate(check.typed(list, data.get("subtasks", []), f"{at}subtasks"))
            ],
        )

    @classmethod
    def read(cls, path: Path) -> TaskResult:
        return cls.from_json(read_json_file(path), Checker(str(path)))

    def write(self, path: Path) -> None:
        write_json(path, self.to_json())


def metric_names(name: str, result: TaskResult) -> tuple[str, ...]:
    """The metrics of a task in a result, in order: a task file's as lm-eval named them in its result (the
    first is its score), rueval's own task's as the task declares them."""
    return tuple(result.metrics) if result.benchmark == LM_EVAL else TASKS[name].metrics


def _task_result(name: str, data: Any, check: Checker, scored: bool = True) -> TaskResult:
    """A task's result in results.json: a scored task's (``tasks``) with its metrics named as the task
    names them today; a predicted task's (``predicted``) with no score."""
    at = f"{'tasks' if scored else 'predicted'}.{name}."
    result = TaskResult.from_json(data, check, at)
    if result.benchmark != LM_EVAL and name not in TASKS:
        raise check.fail(
            at.rstrip("."), f"unknown task; expected one of: {', '.join(TASKS)}, or a task file's (benchmark {LM_EVAL})"
        )
    if result.records is None and (result.benchmark == LM_EVAL or not TASKS[name].nested):
        result.records = result.n  # written before rueval recorded records: one example each
    if not scored:
        if result.score is not None or result.metrics:
            raise check.fail(f"{at}score", "a predicted task has no score nor metrics")
        return result
    if result.score is None:
        raise check.fail(f"{at}score", "missing; a task predicted and not scored belongs under 'predicted'")
    expected = metric_names(name, result)
    if not expected:
        raise check.fail(f"{at}metrics", "is empty; a scored task has metrics")
    if set(result.metrics) != set(expected):
        raise check.fail(
            f"{at}metrics",
            f"has {', '.join(result.metrics) or 'none'}, but {name} is scored by {', '.join(expected)} "
            "(written by an earlier rueval, whose metric names differ? run it again)",
        )
    return result


def _industrial(value: Any, check: Checker, at: str) -> dict[str, Any]:
    figures = dict(check.obj(value, at))
    for key in INDUSTRIAL_FIELDS:
        if key in figures:
            check.number(figures[key], f"{at}.{key}", optional=True)
    return figures


# ---- a run ----------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    """OUT/results.json: the run's settings, its summary figures and every task's result."""

    # the run's spec as JSON (rueval.run.spec: model, solver_options, shots, episodes, seed, limit, ...) without
    # its task list, with the model's identity and rueval's version; ``data`` names where the data came from
    settings: dict[str, Any]
    created: str
    wall_time_s: float
    rsg_total: float | None
    industrial: dict[str, Any]
    tasks: dict[str, TaskResult]  # the tasks scored
    predicted: dict[str, TaskResult] = field(default_factory=dict)  # those predicted, not scored (score None)
    reused: list[str] = field(default_factory=list)  # tasks whose stored result this run took as it was
    notes: list[str] = field(default_factory=list)  # what the run did that its user should know

    @property
    def model(self) -> str:
        return self.settings["model"]

    @property
    def data(self) -> str:
        """Where the data came from: a directory, a zip, hf or the bundled samples."""
        return str(self.settings.get("data", ""))

    @property
    def partial(self) -> bool:
        """A --limit run scored part of each split: its scores are not the benchmark's."""
        return self.settings.get("limit") is not None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.settings,
            "created": self.created,
            "wall_time_s": self.wall_time_s,
            "scale": SCALE,
            "partial": self.partial,
            "reused": self.reused,
            "notes": self.notes,
            "rsg_total": self.rsg_total,
            "industrial": self.industrial,
            "tasks": {name: result.to_json() for name, result in self.tasks.items()},
            "predicted": {name: result.to_json() for name, result in self.predicted.items()},
        }

    @classmethod
    def from_json(cls, data: Any, check: Checker) -> RunResult:
        data = check.obj(data, "")
        check.text(check.required(data, "model", ""), "model")
        tasks = check.obj(check.required(data, "tasks", ""), "tasks")
        predicted = check.obj(data.get("predicted", {}), "predicted")
        if not tasks and not predicted:
            raise check.fail("tasks", "is empty; the run scored no task")
        summary_keys = {
            "created",
            "wall_time_s",
            "scale",
            "partial",
            "reused",
            "notes",
            "rsg_total",
            "industrial",
            "tasks",
            "predicted",
        }
        return cls(
            settings={key: value for key, value in data.items() if key not in summary_keys},
            created=str(data.get("created", "")),
            wall_time_s=check.number(data.get("wall_time_s", 0.0), "wall_time_s"),
            rsg_total=check.number(data.get("rsg_total"), "rsg_total", optional=True),
            industrial=_industrial(data.get("industrial", {}), check, "industrial"),
            tasks={name: _task_result(name, result, check) for name, result in tasks.items()},
            predicted={name: _task_result(name, result, check, scored=False) for name, result in predicted.items()},
            reused=list(data.get("reused", [])),
            notes=list(data.get("notes", [])),
        )

    @classmethod
    def read(cls, run_dir: Path) -> RunResult:
        """A run directory's results.json, checked; a user error names the file and field at fault."""
        path = run_dir / "results.json"
        try:
            found = run_dir.is_dir()
        except OSError as e:  # a name too long, a folder that cannot be searched
            raise RuevalError(f"{run_dir}: cannot be used ({e.strerror or e})") from None
        if not found:
            raise RuevalError(f"{run_dir}: not a directory; give the output directory of `rueval run`")
        if not path.is_file():
            raise RuevalError(f"{run_dir}: no results.json; is this the output directory of `rueval run`?")
        return cls.from_json(read_json_file(path), Checker(str(path)))

    def write(self, run_dir: Path) -> None:
        write_json(run_dir / "results.json", self.to_json())
