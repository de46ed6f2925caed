from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import TEMPLATE, require_modules
from typer.testing import CliRunner

from rueval.cli import app
from rueval.data.local import SAMPLES_DIR


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A writable copy of the bundled samples, which are in the official layout."""
    target = tmp_path / "data"
    shutil.copytree(SAMPLES_DIR, target)
    return target


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


@pytest.fixture
def task_registry():
    """The task registry as the test found it: the tasks a test registers are gone after it."""
    from rueval.tasks import BENCHMARKS, TASKS

    tasks, benchmarks = dict(TASKS), dict(BENCHMARKS)
    yield TASKS
    TASKS.clear()
    TASKS.update(tasks)
    BENCHMARKS.clear()
    BENCHMARKS.update(benchmarks)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own cache folder: no state leaks between tests or from the user's home."""
    monkeypatch.setenv("RUEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A small random GPT-2 with a tokenizer trained on the bundled samples, built once per session."""
    require_modules("torch", "transformers", "tokenizers", extra="lm")
    from rueval.models.backends.tiny import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A small random BERT (an encoder to fine-tune), built once per session."""
    require_modules("torch", "transformers", "tokenizers", extra="finetune")
    from rueval.models.backends.tiny import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def sample_runs(tmp_path_factory) -> dict[str, Path]:
    """Two real runs on the bundled samples (majority and weighted-random), made once per session."""
    base = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUEVAL_CACHE_DIR", str(base / "cache"))
        for model in ("majority", "weighted-random"):
            result = CliRunner().invoke(app, ["run", "-m", model, "-o", str(base / model)], catch_exceptions=False)
            assert result.exit_code == 0, result.output
    return {model: base / model for model in ("majority", "weighted-random")}


@pytest.fixture(scope="session")
def chat_model(tiny_gpt2_dir, tmp_path_factory):
    """The tiny model, its tokenizer given TEMPLATE."""
    target = tmp_path_factory.mktemp("chat") / "model"
    shutil.copytree(tiny_gpt2_dir, target)
    config_file = target / "tokenizer_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["chat_template"] = TEMPLATE
    config_file.write_text(json.dumps(config), encoding="utf-8")
    (target / "chat_template.jinja").unlink(missing_ok=True)
    return target
