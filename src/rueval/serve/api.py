"""The JSON API. A team authenticates with ``Authorization: Bearer <token>`` (never with a cookie,
so no other site can make a browser call it).

- ``POST /api/submissions`` (multipart: ``file``, optional ``name`` and ``public``) -> 202 ``{"id", ...}``,
  the zip checked against the gold before it is queued (400 ``{"error": "<file>:<line>: ..."}``);
- ``GET /api/submissions/{id}`` -> its status, scores and honest-board columns (its own team, or
  anyone once public; otherwise 404);
- ``PATCH /api/submissions/{id}`` (JSON ``{"public": true, "name": ...}``) -> the same, changed;
- ``GET /api/leaderboard`` -> the public submissions, best first, and the reference rows.

Numbers are as the board prints them (rueval.serve.disclosure); a submission's ``url`` is built on
``--public-url`` or is relative, never on the request's Host header. Every response's JSON is checked
against its model in rueval.serve.responses, which /api/openapi.json publishes.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, File, Form, HTTPException, Request, UploadFile
from fastapi import Path as PathParameter

from rueval.serve import responses
from rueval.serve.db import Submission, Team
from rueval.serve.service import Service, submission_json

router = APIRouter(
    prefix="/api",
    responses={code: {"model": responses.ApiError, "description": "an error"} for code in ("4XX", "5XX")},
)
# response_model_exclude_unset: what the JSON leaves out stays out (a baseline comparison's verdict on a small task)
SubmissionId = Annotated[int, PathParameter(ge=1, le=2**31 - 1)]


def service_of(request: Request) -> Service:
    service: Service = request.app.state.service  # set by rueval.serve.app
    return service


def client_address(request: Request) -> str:
    """The client's address: the connection's, or the one a trusted proxy forwarded (rueval.serve.app)."""
    return request.client.host if request.client else "unknown"


def optional_team(request: Request) -> Team | None:
    """The team the request's token names; None without a token; 401 for a token that names none
    (429 for a client that sent too many of those)."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    auth = service_of(request).auth
    team = auth.team_for_token(token.strip(), client_address(request)) if scheme.lower() == "bearer" else None
    if team is None:
        raise HTTPException(401, "invalid token", headers={"www-authenticate": "Bearer"})
    return team


def team(viewer: Annotated[Team | None, Depends(optional_team)]) -> Team:
    if viewer is None:
        raise HTTPException(401, "missing token: send Authorization: Bearer <token>", {"www-authenticate": "Bearer"})
    return viewer


@router.post("/submissions", status_code=202, response_model=responses.Submission, response_model_exclude_unset=True)
def create_submission(
    request: Request,
    team: Annotated[Team, Depends(team)],
    file: Annotated[UploadFile, File()],
    name: Annotated[str, Form(max_length=1000)] = "",
    public: Annotated[bool, Form()] = False,
) -> dict[str, Any]:
    service = service_of(request)
    data = file.file.read(service.config.limits.upload_bytes + 1)
    submission = service.accept(team, data, name or (file.filename or ""), public)
    return shown(service, submission, team)


@router.get("/submissions/{id}", response_model=responses.Submission, response_model_exclude_unset=True)
def get_submission(
    request: Request, id: SubmissionId, viewer: Annotated[Team | None, Depends(optional_team)]
) -> dict[str, Any]:
    service = service_of(request)
    submission, owner = service.submission(id, viewer)
    return shown(service, submission, owner)


@router.patch("/submissions/{id}", response_model=responses.Submission, response_model_exclude_unset=True)
def update_submission(
    request: Request,
    id: SubmissionId,
    team: Annotated[Team, Depends(team)],
    public: Annotated[bool | None, Body()] = None,
    name: Annotated[str | None, Body(max_length=1000)] = None,
) -> dict[str, Any]:
    service = service_of(request)
    return shown(service, service.update(id, team, public, name), team)


@router.get("/leaderboard", response_model=responses.Leaderboard, response_model_exclude_unset=True)
def leaderboard(request: Request) -> dict[str, Any]:
    service = service_of(request)
    rows, current = service.board()
    return {
        "tasks": list(service.gold.tasks),
        "rows": [row.to_json() for row in rows],
        "standings_current": current,
        "references": [row.to_json() for row in service.reference_rows()],
    }


def shown(service: Service, submission: Submission, team: Team) -> dict[str, Any]:
    return submission_json(submission, team, service.disclosure, service.config.public_url or "")
