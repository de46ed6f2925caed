"""The results schema, in one home: what a run writes and what an audit writes, as typed records with
to/from JSON that checks its input. Every writer and reader goes through them, so a malformed or
hand-edited file fails with its path and the offending field instead of a traceback half way through
a report."""

from rueval.results.audit_report import NO_RULE, AuditResult, Coverage, RuleCoverage, TaskAudit
from rueval.results.checks import Checker, read_json_file
from rueval.results.robustness import RobustnessSummary
from rueval.results.run import (
    INDUSTRIAL_FIELDS,
    LM_EVAL,
    PredictionRow,
    RunResult,
    TaskResult,
    metric_names,
    read_predictions,
    scored_examples,
    write_predictions,
)
from rueval.results.scores import PromptResult, PromptScores, ShotResult
from rueval.results.task_files import SampleScores, predictions_file, read_sample_scores, write_sample_scores

__all__ = [
    "INDUSTRIAL_FIELDS",
    "LM_EVAL",
    "NO_RULE",
    "AuditResult",
    "Checker",
    "Coverage",
    "PredictionRow",
    "PromptResult",
    "PromptScores",
    "RobustnessSummary",
    "RuleCoverage",
    "RunResult",
    "SampleScores",
    "ShotResult",
    "TaskAudit",
    "TaskResult",
    "metric_names",
    "predictions_file",
    "read_json_file",
    "read_predictions",
    "scored_examples",
    "read_sample_scores",
    "write_predictions",
    "write_sample_scores",
]
