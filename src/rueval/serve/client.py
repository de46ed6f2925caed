"""The board's client, as `rueval submit --to URL` uses it: upload a zip, wait for its score. httpx
only (a core dependency): uploading needs none of the serve extra."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from rueval.core.errors import RuevalError

POLL_S = 1.0
TIMEOUT_S = 60.0


class BoardClient:
    def __init__(self, url: str, token: str, timeout_s: float = TIMEOUT_S):
        if not url.startswith(("http://", "https://")):
            raise RuevalError(f"--to {url}: expected the board's http:// or https:// address")
        if not token:
            raise RuevalError("--to needs the team's token: --token T or RUEVAL_TOKEN")
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers={"authorization": f"Bearer {token}"}, timeout=timeout_s, trust_env=False
        )

    def __enter__(self) -> BoardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def upload(self, zip_path: Path, name: str = "", public: bool = False) -> dict[str, Any]:
        """Upload the zip; the new submission as the board shows it (status queued)."""
        with zip_path.open("rb") as file:
            files = {"file": (zip_path.name, file, "application/zip")}
            return self._call(
                "POST", "/api/submissions", files=files, data={"name": name, "public": str(public).lower()}
            )

    def link(self, url: str) -> str:
        """A submission's address: the board gives a relative one unless it has a --public-url."""
        return url if url.startswith(("http://", "https://")) else f"{self.url}{url}"

    def submission(self, id: int) -> dict[str, Any]:
        return self._call("GET", f"/api/submissions/{id}")

    def wait(
        self, id: int, on_status: Callable[[dict[str, Any]], None] = lambda _: None, timeout_s: float = 3600.0
    ) -> dict[str, Any]:
        """Poll the submission until it is scored or has failed."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.submission(id)
            on_status(found)
            if found["status"] in ("done", "failed"):
                return found
            if time.monotonic() > deadline:
                raise RuevalError(f"{self.url}: submission {id} is still {found['status']} after {timeout_s:.0f} s")
            time.sleep(POLL_S)

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as e:
            raise RuevalError(f"{self.url}: {str(e) or type(e).__name__}") from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code >= 400:
            detail = body.get("error") if isinstance(body, dict) else None
            raise RuevalError(f"{self.url} answered {response.status_code}: {detail or response.reason_phrase}")
        if not isinstance(body, dict):
            raise RuevalError(f"{self.url}{path}: expected a JSON object, got {response.text[:80]!r}")
        return body
