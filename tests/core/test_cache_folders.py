"""Cache folders: one that cannot be made is one line naming the variable that moves it; one that
cannot be written (read-only, full) costs speed, never the run.

Tests run as root, whom a read-only folder does not stop: the kernel's refusal is raised where the
file is written."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest


def test_a_cache_folder_that_is_a_file_is_one_line_naming_rueval_cache_dir(cli, tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("RUEVAL_CACHE_DIR", str(tmp_path / "cache"))
    result = cli("run", "-m", "tfidf", "-t", "terra", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {tmp_path / 'cache' / 'tfidf'}: cannot be made (Not a directory); "
        "set RUEVAL_CACHE_DIR to a folder rueval can write\n"
    )
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.fixture
def read_only_cache(tmp_path, monkeypatch):
    """RUEVAL_CACHE_DIR whose files cannot be written (folders exist, as in a read-only cache)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("RUEVAL_CACHE_DIR", str(cache))
    made, written = tempfile.mkstemp, Path.write_text

    def refused(path):
        return cache in Path(path).parents

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and (refused(dir) or Path(dir) == cache):
            raise PermissionError(13, "Permission denied", str(dir))
        return made(*args, dir=dir, **kwargs)

    def write_text(self, *args, **kwargs):
        if refused(self):
            raise PermissionError(13, "Permission denied", str(self))
        return written(self, *args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(Path, "write_text", write_text)
    return cache


def test_tfidf_runs_on_with_a_warning_when_its_cache_cannot_be_written(cli, tmp_path, read_only_cache):
    result = cli("run", "-m", "tfidf", "-t", "terra", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "cannot be written (Permission denied); the fitted model is not cached" in result.stderr
    assert list((read_only_cache / "tfidf").iterdir()) == []
    assert json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["tasks"]["terra"]["score"]


def test_a_language_model_runs_on_when_the_cache_cannot_be_written(cli, tmp_path, read_only_cache, tiny_gpt2_dir):
    result = cli("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "parus", "--limit", "2", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "results.json").is_file()
    assert not (read_only_cache / "model-files" / "sha256.json").exists()
