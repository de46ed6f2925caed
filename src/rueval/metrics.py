"""The documented import path of the metric registry; it lives in rueval.scoring.metrics."""

from rueval.scoring.metrics import METRICS, Metric, Outcomes, mean_over_examples, metric, register

__all__ = ["METRICS", "Metric", "Outcomes", "mean_over_examples", "metric", "register"]
