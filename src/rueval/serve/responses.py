"""The JSON API's responses as pydantic models, so that /api/openapi.json describes each of them.

The handlers build the JSON (rueval.serve.service.submission_json, rueval.serve.board.Row.to_json) and
FastAPI checks it against these models on the way out: a field the model does not know is an error, not
dropped (``extra="forbid"``), and a field the JSON leaves out stays out (the routes'
``response_model_exclude_unset``). An ``int | float`` keeps a count an integer beside the scores.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApiError(ApiModel):
    """Any 4xx or 5xx answer of the API."""

    error: str = Field(description="what was wrong, in one line (a bad zip: <file>:<line>: ...)")


class Versus(ApiModel):
    diff: float | None = Field(description="the task score minus the baseline's on the same items")
    distinguishable: bool | None = Field(None, description="the paired bootstrap tells them apart (absent: few items)")


class Rules(ApiModel):
    fired: int
    agreement: float | None = Field(description="the predictions' agreement with the fired rules")
    unfired: int
    unfired_score: float | None


class TaskResult(ApiModel):
    n: int
    score: float | None
    metrics: dict[str, float | None]
    ci: dict[str, list[float]] = Field(description="each metric's confidence interval")
    breakdown: dict[str, dict[str, int | float]] = Field(description='per bucket: {"n", metric: value}')
    versus: dict[str, Versus] = Field(description="against each baseline computed on this gold")
    rules: Rules


class Submission(ApiModel):
    id: int
    name: str
    team: str
    public: bool
    status: str = Field(description="queued | scoring | done | failed")
    created: float = Field(description="seconds since the epoch")
    finished: float | None
    tasks: dict[str, TaskResult]
    total: float | None
    partial: bool = Field(description="scored on some of the benchmark's tasks only")
    ignored: list[str] = Field(description="the zip's tasks the gold has no answers for")
    error: str | None
    url: str


class SubmissionRow(ApiModel):
    team: str | None
    name: str
    id: int
    total: float | None
    partial: bool
    tasks: dict[str, float]
    not_distinguishable_from: dict[str, list[str]] = Field(description="task -> the baselines it cannot be told from")
    standing: dict[str, str] = Field(
        description='ranking ("total" or a task) -> "leader", or "tied": its leader does not beat it beyond chance '
        "(Holm-corrected paired tests, p >= 0.05); absent: neither, few items, or the marks are being recomputed"
    )


class ReferenceRow(ApiModel):
    name: str
    kind: str = Field(description="computed | human | baseline | model")
    source: str
    total: float | None
    tasks: dict[str, float]


class Leaderboard(ApiModel):
    tasks: list[str]
    rows: list[SubmissionRow] = Field(description="the public scored submissions, best first")
    standings_current: bool = Field(
        description="whether the rows' standing marks were computed for these public submissions (else none is shown)"
    )
    references: list[ReferenceRow]
