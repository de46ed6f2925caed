import json

import pytest

from rueval.solvers import NAMED, Family
from rueval.solvers.base import ModelSize
from rueval.solvers.options import NoOptions
from rueval.solvers.trivial import TrivialSolver


class SizedSolver(TrivialSolver):
    """The majority baseline pretending to carry a model, to exercise the size() hook."""

    def size(self) -> ModelSize:
        return ModelSize(parameters=1234, megabytes=0.5)


def test_run_records_industrial_figures_per_task_and_in_total(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "-t", "rcb,muserc", "-o", out)
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for task_result in summary["tasks"].values():
        figures = task_result["industrial"]
        assert figures["examples"] == task_result["n"]
        assert figures["examples_per_s"] == pytest.approx(figures["examples"] / figures["seconds"])
        assert figures["latency_ms_per_example"] == pytest.approx(1000 * figures["seconds"] / figures["examples"])
        assert 10 < figures["peak_rss_mb"] < 100_000  # MiB, not KiB or bytes
        assert "parameters" not in figures  # the trivial baselines have no model
    total = summary["industrial"]
    assert total["examples"] == sum(r["n"] for r in summary["tasks"].values())
    assert total["seconds"] == pytest.approx(sum(r["industrial"]["seconds"] for r in summary["tasks"].values()))
    assert total["peak_rss_mb"] >= max(r["industrial"]["peak_rss_mb"] for r in summary["tasks"].values())
    assert "industrial:" in result.stdout and "examples/s" in result.stdout


def test_model_size_is_recorded_when_the_solver_reports_it(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(
        NAMED, "sized", Family("sized", NoOptions, lambda model, options, seed, work_dir: SizedSolver("majority", seed))
    )
    out = tmp_path / "out"
    result = cli("run", "-t", "terra", "-m", "sized", "-o", out)
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for figures in (summary["industrial"], summary["tasks"]["terra"]["industrial"]):
        assert figures["parameters"] == 1234 and figures["model_size_mb"] == 0.5
    assert "1,234 parameters" in result.stdout
