"""The Hugging Face hub copies of RSG and TAPE, read as files through huggingface_hub.

The datasets' loading scripts do not run on current `datasets`, so the files are fetched
with `snapshot_download` (kept in the HF cache, so later runs, and HF_HUB_OFFLINE=1 runs,
read them from disk) and walked like a local directory: RussianNLP/russian_super_glue keeps
one zip per task under data/, RussianNLP/tape keeps dummy/{raw,episodes}/<task>/*.jsonl.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

from huggingface_hub import snapshot_download

from rueval.core.errors import RuevalError
from rueval.data.local import DataSource
from rueval.data.reading import DEFAULT_LIMITS, Node, ReadLimits
from rueval.data.records import Dataset


def download(repo_id: str, patterns: list[str]) -> Path:
    """The local snapshot of a dataset repo; a separate function so tests can point it at a folder."""
    return Path(snapshot_download(repo_id=repo_id, repo_type="dataset", allow_patterns=patterns))


class HubSource(DataSource):
    """Downloads a benchmark's repo (its tasks' ``layout.hub``) the first time one of its tasks is asked for."""

    def __init__(self, limits: ReadLimits = DEFAULT_LIMITS, tape_set: str = "episodes") -> None:
        super().__init__([], "hf", limits, tape_set)
        self._roots: dict[str, list[Node]] = {}

    def roots(self, task: Dataset) -> Sequence[Node]:
        repo_id = task.layout.hub
        if not repo_id:
            raise RuevalError(f"--data hf: {task.name} has no copy on the Hugging Face hub; pass --data DIR")
        if repo_id not in self._roots:
            try:
                path = download(repo_id, list(task.layout.hub_files))
            except Exception as e:  # network, auth and cache errors all mean the same to the user
                raise RuevalError(
                    f"--data hf: could not get {repo_id} from the Hugging Face hub ({type(e).__name__}: {e}); "
                    "download it where there is network, or pass --data DIR with a local copy"
                ) from None
            archives: list[Node] = [zipfile.Path(z) for z in sorted(path.rglob("*.zip"))]
            self._roots[repo_id] = [*archives, path]
        return self._roots[repo_id]
