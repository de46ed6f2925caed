"""The board's web pages, rendered on the server (Jinja2 templates in serve/templates, no scripts,
no build step): the board, a submission's page and its HTML report, a team's page, the upload
form, and signing in with the team's token. Forms that change something carry the session's form
token; a page that waits for a score reloads itself. Numbers are as rueval.serve.disclosure
publishes them; links are relative (nothing is built on the request's Host header)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, File, Form, HTTPException, Query, Request, UploadFile
from fastapi import Path as PathParameter
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from rueval.serve.api import client_address
from rueval.serve.auth import SESSION_S, SignedIn, new_form_token, same_token
from rueval.serve.board import TOTAL
from rueval.serve.disclosure import shown
from rueval.serve.service import Service

router = APIRouter()
TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
TEMPLATES.env.filters["fromjson"] = json.loads
SESSION_COOKIE, FORM_COOKIE = "rueval_session", "rueval_form"
SubmissionId = Annotated[int, PathParameter(ge=1, le=2**31 - 1)]
CsrfField = Annotated[str, Form(max_length=200)]


def _service(request: Request) -> Service:
    service: Service = request.app.state.service  # set by rueval.serve.app
    return service


def _signed_in(request: Request) -> SignedIn | None:
    return _service(request).auth.signed_in(request.cookies.get(SESSION_COOKIE))


def _page(
    request: Request, template: str, status: int = 200, headers: Mapping[str, str] | None = None, **context: Any
) -> Response:
    service = _service(request)
    context = {
        "signed_in": _signed_in(request),
        "tasks": list(service.gold.tasks),
        "min_n": service.config.min_n,
        **context,
    }
    return TEMPLATES.TemplateResponse(request, template, context, status_code=status, headers=headers)


def _checked_form(request: Request, csrf: str) -> SignedIn:
    """The signed-in team of a form that changes something, its form token checked."""
    signed_in = _signed_in(request)
    if signed_in is None:
        raise HTTPException(401, "sign in first")
    if not same_token(csrf, signed_in.csrf):
        raise HTTPException(403, "the form's token does not match your session; reload the page and try again")
    return signed_in


def error_page(request: Request, status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return _page(request, "error.html", status, headers, status_code=status, message=message)


@router.get("/", response_class=HTMLResponse)
def board(request: Request, sort: Annotated[str, Query(max_length=40)] = TOTAL, order: str = "desc") -> Response:
    service = _service(request)
    key = sort if sort in (TOTAL, *service.gold.tasks) else TOTAL
    rows, current = service.board(key, descending=order != "asc")
    references = service.reference_rows()
    return _page(request, "board.html", rows=rows, current=current, references=references, sort=key, order=order)


@router.get("/submissions/{id}", response_class=HTMLResponse)
def submission(request: Request, id: SubmissionId) -> Response:
    service, signed_in = _service(request), _signed_in(request)
    found, team = service.submission(id, signed_in.team if signed_in else None)
    own = signed_in is not None and signed_in.team.id == found.team_id
    report = (service.store.report_dir(id) / "results.json").is_file()
    results = service.disclosure.results(found.results_json())
    return _page(
        request,
        "submission.html",
        submission=found,
        team=team,
        own=own,
        report=report,
        results=results,
        total=shown(found.total),
    )


@router.get("/submissions/{id}/report", response_class=HTMLResponse)
def report(request: Request, id: SubmissionId) -> Response:
    signed_in = _signed_in(request)
    _service(request).submission(id, signed_in.team if signed_in else None)
    path = _service(request).report(id)
    if path is None:
        raise HTTPException(404, f"submission {id} has no report yet")
    return HTMLResponse(path.read_text(encoding="utf-8"))


@router.post("/submissions/{id}/publish")
def publish(request: Request, id: SubmissionId, csrf: CsrfField, public: Annotated[bool, Form()] = True) -> Response:
    signed_in = _checked_form(request, csrf)
    _service(request).update(id, signed_in.team, public=public)
    return RedirectResponse(f"/submissions/{id}", 303)


@router.get("/teams/{name}", response_class=HTMLResponse)
def team_page(request: Request, name: Annotated[str, PathParameter(max_length=200)]) -> Response:
    service, signed_in = _service(request), _signed_in(request)
    team = service.team_named(name)
    own = signed_in is not None and signed_in.team.id == team.id
    return _page(request, "team.html", team=team, own=own, submissions=service.team_submissions(team, own))


@router.get("/upload", response_class=HTMLResponse)
def upload_form(request: Request) -> Response:
    if _signed_in(request) is None:
        return RedirectResponse("/signin", 303)
    return _page(request, "upload.html", limits=_service(request).config.limits)


@router.post("/upload")
def upload(
    request: Request,
    csrf: CsrfField,
    file: Annotated[UploadFile, File()],
    name: Annotated[str, Form(max_length=1000)] = "",
    public: Annotated[bool, Form()] = False,
) -> Response:
    signed_in = _checked_form(request, csrf)
    service = _service(request)
    data = file.file.read(service.config.limits.upload_bytes + 1)
    submission = service.accept(signed_in.team, data, name or (file.filename or ""), public)
    return RedirectResponse(f"/submissions/{submission.id}", 303)


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request) -> Response:
    token = new_form_token()
    response = _page(request, "signin.html", form_token=token)
    response.set_cookie(FORM_COOKIE, token, httponly=True, samesite="strict", secure=_secure(request))
    return response


@router.post("/signin")
def signin(request: Request, token: Annotated[str, Form(max_length=200)], csrf: CsrfField) -> Response:
    if not same_token(csrf, request.cookies.get(FORM_COOKIE)):
        raise HTTPException(403, "the form's token does not match; reload the sign-in page and try again")
    service = _service(request)
    team = service.auth.team_for_token(token.strip(), client_address(request))
    if team is None:
        raise HTTPException(401, "this token names no team")
    response = RedirectResponse(f"/teams/{quote(team.name, safe='')}", 303)
    response.set_cookie(
        SESSION_COOKIE,
        service.auth.sign_in(team),
        max_age=SESSION_S,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )
    response.delete_cookie(FORM_COOKIE)
    return response


@router.post("/signout")
def signout(request: Request, csrf: CsrfField) -> Response:
    _checked_form(request, csrf)
    _service(request).auth.sign_out(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/", 303)
    response.delete_cookie(SESSION_COOKIE)
    return response


def _secure(request: Request) -> bool:
    return _service(request).config.secure_cookies
