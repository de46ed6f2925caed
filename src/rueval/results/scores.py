"""A task's scores over several runs of it, each with its mean and standard deviation (numpy's,
ddof 0, as TAPE reports them): each k over its few-shot episodes (ShotResult), and the task under
each of its prompts (PromptScores, --prompts all)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rueval.results.checks import Checker


def mean_of(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each metric's mean over ``runs`` (each a metric -> value)."""
    return {m: float(np.mean([r[m] for r in runs])) for m in runs[0]}


def std_of(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each metric's standard deviation over ``runs`` (population, ddof 0)."""
    return {m: float(np.std([r[m] for r in runs])) for m in runs[0]}


@dataclass
class ShotResult:
    """One k of a few-shot run: each metric's mean and std over its episodes (TAPE's way), and the
    episodes themselves. ``metrics_norm``: lm-eval's acc_norm variant, for log-likelihood scoring."""

    metrics: dict[str, float]
    std: dict[str, float]
    score: float
    score_std: float
    episodes: list[dict[str, Any]]
    metrics_norm: dict[str, float] | None = None
    metrics_norm_std: dict[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {key: value for key, value in data.items() if value is not None}

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str) -> ShotResult:
        data = check.obj(data, at)
        return cls(
            metrics=check.numbers(check.required(data, "metrics", f"{at}."), f"{at}.metrics"),
            std=check.numbers(data.get("std", {}), f"{at}.std"),
            score=check.number(data.get("score", 0.0), f"{at}.score"),
            score_std=check.number(data.get("score_std", 0.0), f"{at}.score_std"),
            episodes=list(data.get("episodes", [])),
            metrics_norm=check.numbers(data["metrics_norm"], f"{at}.metrics_norm") if "metrics_norm" in data else None,
            metrics_norm_std=check.numbers(data["metrics_norm_std"], f"{at}.metrics_norm_std")
            if "metrics_norm_std" in data
            else None,
        )


@dataclass(frozen=True)
class PromptResult:
    """The task under one prompt: its score and metrics as the task's headline would be under it (the
    run's first few-shot setting), and with several settings each k over its episodes."""

    score: float
    metrics: dict[str, float]
    shots: dict[int, ShotResult] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"score": self.score, "metrics": self.metrics}
        if self.shots:
            data["shots"] = {str(k): shot.to_json() for k, shot in self.shots.items()}
        return data

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str) -> PromptResult:
        data = check.obj(data, at)
        shots = {}
        for k, shot in check.obj(data.get("shots", {}), f"{at}.shots").items():
            if not k.isdigit():
                raise check.fail(f"{at}.shots.{k}", "expected a number of shots as the key")
            shots[int(k)] = ShotResult.from_json(shot, check, f"{at}.shots.{k}")
        return cls(
            score=check.number(check.required(data, "score", f"{at}."), f"{at}.score"),
            metrics=check.numbers(check.required(data, "metrics", f"{at}."), f"{at}.metrics"),
            shots=shots,
        )


@dataclass(frozen=True)
class PromptScores:
    """A task scored under every prompt its paper ran (TAPE's Appendix C), the default first, with the
    mean and standard deviation over prompts. The mean and spread are derived: written for readers,
    derived again on reading."""

    variants: tuple[PromptResult, ...]

    @property
    def mean(self) -> float:
        return float(np.mean([variant.score for variant in self.variants]))

    @property
    def std(self) -> float:
        return float(np.std([variant.score for variant in self.variants]))

    @property
    def metrics_mean(self) -> dict[str, float]:
        return mean_of([variant.metrics for variant in self.variants])

    @property
    def metrics_std(self) -> dict[str, float]:
        return std_of([variant.metrics for variant in self.variants])

    @property
    def by_k(self) -> dict[int, tuple[float, float]]:
        """Each k's score (its mean over episodes) as mean and std over prompts; empty with one setting."""
        ks = self.variants[0].shots
        scores = {k: [variant.shots[k].score for variant in self.variants] for k in ks}
        return {k: (float(np.mean(values)), float(np.std(values))) for k, values in scores.items()}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"mean": self.mean, "std": self.std}
        data |= {"metrics_mean": self.metrics_mean, "metrics_std": self.metrics_std}
        if by_k := self.by_k:
            data["shots"] = {str(k): {"score": mean, "score_std": std} for k, (mean, std) in by_k.items()}
        return {**data, "variants": [variant.to_json() for variant in self.variants]}

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str) -> PromptScores:
        data = check.obj(data, at)
        variants = check.typed(list, check.required(data, "variants", f"{at}."), f"{at}.variants")
        if not variants:
            raise check.fail(f"{at}.variants", "is empty; expected each prompt's scores, the default first")
        read = tuple(PromptResult.from_json(v, check, f"{at}.variants[{i}]") for i, v in enumerate(variants))
        for i, variant in enumerate(read):
            if variant.metrics.keys() != read[0].metrics.keys() or variant.shots.keys() != read[0].shots.keys():
                raise check.fail(f"{at}.variants[{i}]", "has other metrics or shots than the default prompt's")
        return cls(read)
