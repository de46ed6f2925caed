"""What the board publishes of a scored submission: no more than its score says about the gold.

The worker keeps every number it computed (the database's ``results``, the run results in the
store); the API, the pages and the report show them through ``Disclosure``:

- every score, metric and interval bound rounded to the precision the board prints, one decimal
  (as the papers' tables): a number with more digits would tell the resamples, or the items, apart;
- the paired tests' p-values never as numbers: a task of at least ``min_n`` items carries the
  ≈M / ≈H marks (p >= 0.05), a smaller one none;
- scores on a subset of the items (where no rule fires, the slices, LiDiRus' features) only for a
  subset of at least ``min_n`` items, and then in steps of ``SUBSET_STEP`` points; smaller subsets
  keep their item count only;
- no checksum of the gold (its test file's SHA-256 would let anyone try every labelling of a small
  test set until one matches).

Why MIN_N = 100: a share on u items has a 95% interval of about ±100/√u points at worst (1.96 x 50/√u),
±10 at 100 items. Below that a subset score says little a team can use, while each one published tells
which of a few items were right; at 100 items and more, a 10-point step hides no difference the
data could support. With the bootstrap seeded by the board's secret (rueval.serve.secret), an
interval or a mark on a set of two-class answers depends on the items only through the score; the
test that replays the enumeration attack (tests/serve/test_disclosure.py) checks it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, overload

from rueval.results import RunResult, TaskResult

MIN_N = 100
SUBSET_STEP = 10.0
DIGITS = 1


@overload
def shown(value: float) -> float: ...
@overload
def shown(value: None) -> None: ...
@overload
def shown(value: float | None) -> float | None: ...
def shown(value: float | None) -> float | None:
    """A number as the board prints it."""
    return None if value is None else round(float(value), DIGITS)


def _interval(bounds: list[float]) -> list[float]:
    return [shown(bound) for bound in bounds]


@dataclass(frozen=True)
class Disclosure:
    min_n: int = MIN_N

    def subset(self, value: float | None, n: int) -> float | None:
        """A score on a subset of ``n`` items: None below min_n, else in steps of SUBSET_STEP."""
        if value is None or n < self.min_n:
            return None
        return shown(SUBSET_STEP * round(float(value) / SUBSET_STEP))

    def buckets(self, buckets: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """Per-bucket metrics ({bucket: {"n", metric: value}}: a breakdown or a slice) as published."""
        published = {}
        for bucket, values in buckets.items():
            n = int(values.get("n", 0))
            metrics = {name: self.subset(value, n) for name, value in values.items() if name != "n"}
            published[bucket] = {"n": n, **{name: value for name, value in metrics.items() if value is not None}}
        return published

    def task(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """One task of a submission's results, as the API and the pages show it."""
        n = int(entry["n"])
        rules = entry["rules"]
        return {
            "n": n,
            "score": shown(entry["score"]),
            "metrics": {name: shown(value) for name, value in entry["metrics"].items()},
            "ci": {name: _interval(bounds) for name, bounds in entry["ci"].items()},
            "breakdown": self.buckets(entry.get("breakdown", {})),
            "versus": {
                model: {
                    "diff": shown(test["diff"]),
                    **({"distinguishable": test["distinguishable"]} if n >= self.min_n else {}),
                }
                for model, test in entry["versus"].items()
            },
            "rules": {
                "fired": rules["fired"],
                "agreement": shown(rules["agreement"]),  # read off the predictions and the rules, not the gold
                "unfired": rules["unfired"],
                "unfired_score": self.subset(rules["unfired_score"], rules["unfired"]),
            },
        }

    def results(self, results: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        return {name: self.task(entry) for name, entry in results.items()}

    def marked(self, tasks: Sequence[str], sizes: Mapping[str, int]) -> bool:
        """Whether a mark decided on these tasks' items is published: each has at least min_n items."""
        return all(sizes.get(task, 0) >= self.min_n for task in tasks)

    def alike(self, alike: Mapping[str, list[str]], sizes: Mapping[str, int]) -> dict[str, list[str]]:
        """The board's marks (task -> the baselines a score cannot be told from) for tasks of at least min_n items."""
        return {task: list(models) for task, models in alike.items() if self.marked([task], sizes)}

    def run(self, run: RunResult) -> RunResult:
        """A submission's run results as its public report draws them."""
        return replace(
            run,
            rsg_total=shown(run.rsg_total),
            tasks={name: self._task_result(result) for name, result in run.tasks.items()},
        )

    def _task_result(self, result: TaskResult) -> TaskResult:
        return replace(
            result,
            score=shown(result.score),
            metrics={name: shown(value) for name, value in result.metrics.items()},
            ci={name: _interval(bounds) for name, bounds in result.ci.items()},
            breakdown=self.buckets(result.breakdown),
            slices={name: self.buckets(buckets) for name, buckets in result.slices.items()},
            data={},
            fingerprint="",
        )
