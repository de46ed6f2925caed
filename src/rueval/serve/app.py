"""The web application: the JSON API (rueval.serve.api) and the pages (rueval.serve.pages) on
FastAPI, with what guards them all: a cap on request bodies (read as they arrive, so a 1 GB upload
costs the server no more than the cap) and a timeout on each piece of them, errors as one clear
line and never a traceback or a gold answer (a full or read-only store, a locked database: 503,
naming no path), and security headers on every response. A client's address is the connection's,
or the one X-Forwarded-For gives when the connection comes from a proxy the configuration trusts
(uvicorn's proxy-headers middleware, with the board's own list: nobody else's header is believed).
No URL is built on the request's Host header: links are relative or on ``--public-url``, and a path
with a trailing slash is a 404, not a redirect to the Host."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import anyio
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import OperationalError
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from rueval.core.errors import RuevalError
from rueval.serve import api, pages
from rueval.serve.auth import RateLimited
from rueval.serve.faults import RETRY_AFTER_S, UNAVAILABLE, described, is_storage_fault
from rueval.serve.service import NotFound, Service

log = logging.getLogger("rueval.serve")
BODY_SLACK = 2**20  # room for the multipart framing and form fields around the zip
# No scripts anywhere; styles inline; images only as data: URLs (the report's figures).
HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


class TooLarge(HTTPException):
    def __init__(self, limit: int):
        super().__init__(413, f"request body over the limit of {limit:,} bytes")


class BodyTimeout(HTTPException):
    def __init__(self, timeout_s: float):
        super().__init__(408, f"the request's body stopped arriving for {timeout_s:g} s", {"connection": "close"})


class Guard:
    """ASGI middleware: refuses a body over ``limit`` bytes (by its Content-Length at once, else as it
    streams in) or one that stops arriving for ``read_timeout_s`` (408, and the connection closed),
    and adds HEADERS to every response."""

    def __init__(self, app: ASGIApp, limit: int, read_timeout_s: float):
        self.app, self.limit, self.read_timeout_s = app, limit, read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.limit:
            return await _plain_error(send, 413 if length.isdigit() else 400, TooLarge(self.limit).detail)
        received, complete = 0, False

        async def limited() -> Message:
            nonlocal received, complete
            if complete:  # the body is in: what follows is the wait for a disconnect, however long
                return await receive()
            with anyio.move_on_after(self.read_timeout_s) as waiting:
                message = await receive()
            if waiting.cancelled_caught:
                raise BodyTimeout(self.read_timeout_s)
            received += len(message.get("body", b""))
            if received > self.limit:
                raise TooLarge(self.limit)
            complete = not message.get("more_body", False)
            return message

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in HEADERS.items() if k.encode() not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, limited, with_headers)


async def _plain_error(send: Send, status: int, message: str) -> None:
    body = JSONResponse({"error": message}).body
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(b"connection", b"close"), *((k.encode(), v.encode()) for k, v in HEADERS.items())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def create_app(service: Service, read_timeout_s: float = 30.0) -> FastAPI:
    app = FastAPI(
        title="rueval leaderboard",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
        redirect_slashes=False,
    )
    app.state.service = service
    app.include_router(api.router)
    app.include_router(pages.router)
    app.add_middleware(Guard, limit=service.config.limits.upload_bytes + BODY_SLACK, read_timeout_s=read_timeout_s)
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(service.config.trusted_proxies))

    # Handlers of these classes answer without the server logging a traceback (a 500's handler does not).
    @app.exception_handler(OperationalError)
    @app.exception_handler(OSError)
    async def storage_fault(request: Request, error: Exception) -> Response:
        if not is_storage_fault(error):
            raise error  # a 500, below
        return _unavailable(request, error)

    @app.exception_handler(RuevalError)
    async def user_error(request: Request, error: RuevalError) -> Response:
        if is_storage_fault(error):  # a WriteError: its message names the file
            return _unavailable(request, error)
        status = 404 if isinstance(error, NotFound) else 429 if isinstance(error, RateLimited) else 400
        headers = {"retry-after": str(error.retry_after)} if isinstance(error, RateLimited) else None
        return _error(request, status, str(error), headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        return _error(request, error.status_code, str(error.detail), error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> Response:
        return _error(request, 400, _validation_message(error))

    @app.exception_handler(Exception)
    async def internal(request: Request, error: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path)
        return _error(request, 500, "internal error; the board's operator has the log")

    return app


def _unavailable(request: Request, error: Exception) -> Response:
    log.warning("%s %s: 503, %s", request.method, request.url.path, described(error))
    return _error(request, 503, UNAVAILABLE, {"retry-after": str(RETRY_AFTER_S)})


def _error(request: Request, status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status, headers=headers)
    return pages.error_page(request, status, message, headers)


def _validation_message(error: RequestValidationError) -> str:
    """FastAPI's validation errors as one line: the first field at fault and why."""
    first = error.errors()[0] if error.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path"))
    return f"field '{where}': {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid request"))
