"""The board's folder (--store): uploads stored once by their content's SHA-256, each submission's
run results and report (reports/<id>/: results.json, report.html; no predictions and no gold), and
the SQLite database unless --db names another. Workers on other machines share it."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rueval.core.errors import RuevalError
from rueval.core.files import atomic_path
from rueval.report.html import write_report

if TYPE_CHECKING:
    from rueval.results import RunResult


class Store:
    def __init__(self, root: Path):
        self.root = Path(root)

    def upload_path(self, sha256: str) -> Path:
        return self.root / "uploads" / sha256[:2] / f"{sha256}.zip"

    def put_upload(self, data: bytes) -> str:
        """Store the bytes under their SHA-256 (once: the same zip uploaded twice is one file)."""
        sha256 = hashlib.sha256(data).hexdigest()
        path = self.upload_path(sha256)
        if not path.is_file():
            with atomic_path(path) as tmp:
                tmp.write_bytes(data)
        return sha256

    def upload(self, sha256: str) -> bytes:
        path = self.upload_path(sha256)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise RuevalError(f"{path}: the stored upload cannot be read ({e.strerror or e})") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RuevalError(f"{path}: the stored upload has changed since it was received")
        return data

    def report_dir(self, submission: int) -> Path:
        return self.root / "reports" / str(submission)

    def put_results(self, submission: int, run: RunResult) -> None:
        """The submission's run results, from which its report is drawn when first asked for."""
        run.write(self.report_dir(submission))

    def report(self, folder: Path) -> Path | None:
        """The HTML report of the run results in ``folder`` (a submission's, as published), drawn the
        first time it is asked for (the figures take seconds: a worker does not spend them on reports
        nobody reads); None before the submission is scored."""
        page = folder / "report.html"
        if not page.is_file():
            if not (folder / "results.json").is_file():
                return None
            with _drawing:
                if not page.is_file():
                    write_report([folder], page, assets=folder / "assets")
        return page


_drawing = threading.Lock()  # one report drawn at a time (matplotlib's pyplot is not thread-safe)
