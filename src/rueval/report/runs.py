"""Finished runs read back from RUN_DIR/results.json and checked, for reports and leaderboards.

Every section a report draws from is checked here, once, so a malformed file fails with its path
and the offending field instead of a traceback half way through drawing a plot.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rueval.errors import DataError, RuevalError
from rueval.report.reference import ScoreRow
from rueval.tasks import TASKS

INDUSTRIAL_FIELDS = ("examples_per_s", "latency_ms_per_example", "peak_rss_mb", "model_size_mb", "parameters")


@dataclass(frozen=True)
class Run:
    """One run directory and its results.json (checked)."""

    dir: Path
    label: str  # the model name, with the directory name added when two runs share a model
    results: Mapping[str, Any]

    @property
    def tasks(self) -> Mapping[str, Mapping[str, Any]]:
        return self.results["tasks"]

    def benchmark_tasks(self, benchmark: str) -> dict[str, Mapping[str, Any]]:
        return {name: r for name, r in self.tasks.items() if TASKS[name].benchmark == benchmark}

    def score_rows(self, benchmark: str) -> list[ScoreRow]:
        """The run's rows for a benchmark table: one row, or one per k when tasks were run few-shot."""
        tasks = self.benchmark_tasks(benchmark)
        if not tasks:
            return []
        shots = sorted({int(k) for r in tasks.values() for k in r.get("shots", {})})
        if not shots:
            metrics = {name: dict(r["metrics"]) for name, r in tasks.items()}
            return [ScoreRow(self.label, benchmark, str(self.dir), metrics, kind="run")]
        rows = []
        for k in shots:
            at_k = {name: r["shots"][str(k)] for name, r in tasks.items() if str(k) in r.get("shots", {})}
            metrics = {name: dict(s["metrics"]) for name, s in at_k.items()}
            std = {name: dict(s.get("std", {})) for name, s in at_k.items()}
            rows.append(ScoreRow(self.label, benchmark, str(self.dir), metrics, std, k=k, kind="run"))
        return rows


def load_runs(dirs: Sequence[Path]) -> list[Run]:
    """Read and check each RUN_DIR/results.json; label runs by model, disambiguated by directory."""
    if not dirs:
        raise RuevalError("no run directory given")
    loaded = [(Path(d), load_results(Path(d))) for d in dirs]
    models = Counter(results["model"] for _, results in loaded)
    return [
        Run(d, results["model"] if models[results["model"]] == 1 else f"{results['model']} ({d.name})", results)
        for d, results in loaded
    ]


def load_results(run_dir: Path) -> dict[str, Any]:
    """A run directory's results.json, its shape checked; a user error names the file and field at fault."""
    path = run_dir / "results.json"
    if not run_dir.is_dir():
        raise RuevalError(f"{run_dir}: not a directory; give the output directory of `rueval run`")
    if not path.is_file():
        raise RuevalError(f"{run_dir}: no results.json; is this the output directory of `rueval run`?")
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(str(path), f"not valid JSON: {e.msg}", line=e.lineno) from None
    except UnicodeDecodeError:
        raise DataError(str(path), "not UTF-8 text") from None
    _Checker(str(path)).results(results)
    return results


class _Checker:
    """Checks the shape of results.json, naming the field at fault."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, field: str, message: str) -> DataError:
        return DataError(self.file, message, field=field or None)

    def obj(self, value: Any, field: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(field, f"expected an object, got {type(value).__name__}")
        return value

    def number(self, value: Any, field: str, optional: bool = False) -> None:
        if optional and value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(field, f"expected a number, got {value!r:.40}")

    def numbers(self, value: Any, field: str) -> None:
        for key, item in self.obj(value, field).items():
            self.number(item, f"{field}.{key}")

    def required(self, data: Mapping[str, Any], key: str, field: str) -> Any:
        if key not in data:
            raise self.fail(f"{field}{key}", "missing")
        return data[key]

    def results(self, results: Any) -> None:
        results = self.obj(results, "")
        if not isinstance(self.required(results, "model", ""), str):
            raise self.fail("model", "expected a string")
        self.number(results.get("rsg_total"), "rsg_total", optional=True)
        if "industrial" in results:
            self.industrial(results["industrial"], "industrial")
        tasks = self.obj(self.required(results, "tasks", ""), "tasks")
        if not tasks:
            raise self.fail("tasks", "is empty; the run scored no task")
        for name, result in tasks.items():
            if name not in TASKS:
                raise self.fail(f"tasks.{name}", f"unknown task; expected one of: {', '.join(TASKS)}")
            self.task(self.obj(result, f"tasks.{name}"), f"tasks.{name}.")

    def task(self, result: Mapping[str, Any], at: str) -> None:
        self.numbers(self.required(result, "metrics", at), f"{at}metrics")
        self.number(self.required(result, "score", at), f"{at}score")
        self.number(self.required(result, "n", at), f"{at}n")
        for tag, values in self.obj(result.get("breakdown", {}), f"{at}breakdown").items():
            self.numbers(values, f"{at}breakdown.{tag}")
        for metric, bounds in self.obj(result.get("ci", {}), f"{at}ci").items():
            if not (isinstance(bounds, list | tuple) and len(bounds) == 2):
                raise self.fail(f"{at}ci.{metric}", "expected two numbers, the low and high bounds")
            for i, bound in enumerate(bounds):
                self.number(bound, f"{at}ci.{metric}[{i}]")
        for name, buckets in self.obj(result.get("slices", {}), f"{at}slices").items():
            for bucket, values in self.obj(buckets, f"{at}slices.{name}").items():
                self.numbers(values, f"{at}slices.{name}.{bucket}")
        if "industrial" in result:
            self.industrial(result["industrial"], f"{at}industrial")
        for k, shot in self.obj(result.get("shots", {}), f"{at}shots").items():
            if not k.isdigit():
                raise self.fail(f"{at}shots.{k}", "expected a number of shots as the key")
            shot = self.obj(shot, f"{at}shots.{k}")
            self.numbers(self.required(shot, "metrics", f"{at}shots.{k}."), f"{at}shots.{k}.metrics")
            self.numbers(shot.get("std", {}), f"{at}shots.{k}.std")
        for name, attack in self.obj(result.get("perturbations", {}), f"{at}perturbations").items():
            where = f"{at}perturbations.{name}"
            attack = self.obj(attack, where)
            self.numbers(self.required(attack, "metrics", f"{where}."), f"{where}.metrics")
            for key in ("score", "asr"):
                self.number(attack.get(key), f"{where}.{key}", optional=True)

    def industrial(self, figures: Any, at: str) -> None:
        for key, value in self.obj(figures, at).items():
            if key in INDUSTRIAL_FIELDS:
                self.number(value, f"{at}.{key}", optional=True)
