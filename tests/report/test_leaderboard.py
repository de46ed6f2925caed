"""The papers' reference rows, and `rueval leaderboard` ranking runs among them."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from statistics import fmean

import pytest
from typer.testing import CliRunner

import rueval
from rueval.cli import app
from rueval.report.leaderboard import format_score
from rueval.report.reference import HEURISTICS, RSG, TAPE, TASK_LEVEL, reference, references
from rueval.tasks import BENCHMARKS, TASKS
from rueval.tasks import RSG as RSG_BENCHMARK
from rueval.tasks import TAPE as TAPE_BENCHMARK

TAPE_TASKS = ("winograd", "ru_openbook", "ru_worldtree", "multiq", "chegeka", "sit_ethics", "per_ethics")


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def as_official_run(run_dir: Path, out: Path, keep: bool = False) -> Path:
    """A copy of a run on the bundled samples, its results.json as a run of the official files writes
    it: its data a folder, each scored split of the official record count. Its scores are unchanged;
    ``keep``: its predictions too."""
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    results["data"] = "/data/official"
    for name, task in results["tasks"].items():
        official = BENCHMARKS[TASKS[name].benchmark].official_count(name, task["split"])
        task["records"] = task["records"] if official is None else official
    if keep:
        shutil.copytree(run_dir / "predictions", out / "predictions")
    else:
        out.mkdir(parents=True)
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def runs(sample_runs, tmp_path_factory) -> dict[str, Path]:
    """The sample runs as runs of the official files: comparable with the papers' rows."""
    base = tmp_path_factory.mktemp("official")
    return {model: as_official_run(run_dir, base / model) for model, run_dir in sample_runs.items()}


def test_reference_rows_transcribe_the_papers():
    assert reference(RSG_BENCHMARK, RSG, "RuBERT").metrics["rcb"] == {"avg_f1": 43.2, "accuracy": 46.8}
    assert reference(RSG_BENCHMARK, RSG, "Human").metrics["lidirus"] == {"mcc": 62.6}
    assert reference(RSG_BENCHMARK, RSG, "TF-IDF").metrics["rcb"] == {
        TASK_LEVEL: 45.0
    }  # one value printed under F1/Acc
    assert reference(RSG_BENCHMARK, HEURISTICS, "Majority").metrics["rwsd"] == {"accuracy": 66.9}
    assert reference(RSG_BENCHMARK, HEURISTICS, "Random balanced").counterpart == "weighted-random"
    large = reference(TAPE_BENCHMARK, TAPE, "ruGPT-3 Large", k=8)
    assert large.metrics["ru_worldtree"] == {"macro_f1": 41.9, "accuracy": 41.9}
    assert large.std["ru_worldtree"] == {"macro_f1": 0.7, "accuracy": 0.7}
    assert reference(TAPE_BENCHMARK, TAPE, "Human").metrics["multiq"] == {"token_f1": 92.8, "exact_match": 91.0}
    assert "multiq" not in reference(TAPE_BENCHMARK, TAPE, "Random").metrics  # '✗' in the paper
    assert len(references(TAPE_BENCHMARK, TAPE)) == 15 and len(references(RSG_BENCHMARK)) == 12


@pytest.mark.parametrize("row", references(RSG_BENCHMARK), ids=lambda r: f"{r.source}: {r.name}")
def test_rsg_reference_totals_recompute_to_the_printed_average(row):
    if row.name.startswith("SOTA"):
        # Per-task bests of different systems; the printed total is the best single system's.
        assert row.total()[0] - row.printed_total[0] > 5 and row.note
        return
    # Rounding: Table 2 prints some cells to two decimals (x100: ±0.5), Table 8 all to three (±0.05);
    # the printed average adds its own ±0.05.
    tolerance = 0.55 if row.source == RSG else 0.1
    assert row.total()[0] == pytest.approx(row.printed_total[0], abs=tolerance)


def test_tape_human_average_recomputes_to_the_printed_one():
    human = reference(TAPE_BENCHMARK, TAPE, "Human")
    f1, accuracy = human.total()
    assert (round(f1, 2), round(accuracy, 2)) == human.printed_total == (78.09, 76.17)


def test_leaderboard_ranks_runs_among_the_papers_rows(runs, tmp_path):
    result = invoke("leaderboard", runs["majority"], runs["weighted-random"], "-o", tmp_path)
    assert result.exit_code == 0, result.output
    assert "RussianSuperGLUE leaderboard" in result.output and "TAPE leaderboard" in result.output
    assert "| # | Name | Total | LiDiRus (MCC) | RCB (F1/Acc) |" in result.output
    rsg = read_csv(tmp_path / "leaderboard_rsg.csv")
    totals = [float(row["total"]) for row in rsg]
    assert totals == sorted(totals, reverse=True)
    assert [row["rank"] for row in rsg] == [str(i) for i in range(1, len(rsg) + 1)]
    by_name = {(row["name"], row["source"]): row for row in rsg}
    assert by_name["Human", "Shavrina et al. (2020), Table 2"]["total"] == "80.2"
    for model, run_dir in runs.items():
        results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        row = by_name[model, str(run_dir)]
        assert float(row["total"]) == pytest.approx(results["rsg_total"], abs=1e-4)
        assert float(row["rcb:accuracy"]) == pytest.approx(results["tasks"]["rcb"]["metrics"]["accuracy"], abs=1e-4)
    markdown = (tmp_path / "leaderboard_rsg.md").read_text(encoding="utf-8")
    assert "**majority**" in markdown and "Shavrina, T., Fenogenova, A." in markdown  # runs marked, sources cited

    tape = read_csv(tmp_path / "leaderboard_tape.csv")
    majority = json.loads((runs["majority"] / "results.json").read_text(encoding="utf-8"))["tasks"]
    row = next(r for r in tape if r["name"] == "majority")
    expected_f1 = fmean(majority[t]["metrics"][TASKS[t].metrics[0]] for t in TAPE_TASKS)
    assert float(row["avg_f1"]) == pytest.approx(expected_f1, abs=1e-4)
    # TAPE's random and linear baselines were not run on MultiQ and CheGeKa: no average, listed last, unranked.
    assert [(r["name"], r["rank"]) for r in tape[-2:]] == [("Random", ""), ("Linear", "")]
    human = next(r for r in tape if r["name"] == "Human")
    assert (human["avg_f1"], human["avg_acc"], human["rank"]) == ("78.09", "76.17", "1")
    assert "| Avg (F1 / Acc) |" in (tmp_path / "leaderboard_tape.md").read_text(encoding="utf-8")


def test_tape_leaderboard_shows_few_shot_rows_with_std(tmp_path):
    """An LM run evaluated at k = 0 and 4: one row per k, mean ± std per cell, as TAPE's Table 3."""
    tasks = {}
    for i, task in enumerate(TAPE_TASKS):
        metrics = TASKS[task].metrics
        shots = {
            str(k): {"metrics": {m: 10.0 + i + k for m in metrics}, "std": dict.fromkeys(metrics, 1.5)} for k in (0, 4)
        }
        tasks[task] = {"metrics": dict(shots["0"]["metrics"]), "score": 10.0 + i, "n": 20, "shots": shots}
    run_dir = tmp_path / "lm"
    run_dir.mkdir()
    (run_dir / "results.json").write_text(json.dumps({"model": "ruGPT-tiny", "tasks": tasks}), encoding="utf-8")
    result = invoke("leaderboard", run_dir, "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "board" / "leaderboard_rsg.csv").exists()  # no RSG task was run
    rows = {r["k"]: r for r in read_csv(tmp_path / "board" / "leaderboard_tape.csv") if r["name"] == "ruGPT-tiny"}
    assert set(rows) == {"0", "4"}
    assert float(rows["4"]["avg_f1"]) == pytest.approx(fmean(14.0 + i for i in range(7)))
    assert rows["4"]["winograd:macro_f1:std"] == "1.5"
    assert "| 10.0 ±1.5 / 10.0 ±1.5 |" in result.output


def test_leaderboard_of_a_partial_run_has_no_total(tmp_path):
    result = invoke("run", "-t", "rcb,parus", "-m", "majority", "-o", tmp_path / "partial")
    assert result.exit_code == 0, result.output
    result = invoke("leaderboard", tmp_path / "partial", "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    row = next(r for r in read_csv(tmp_path / "board" / "leaderboard_rsg.csv") if r["name"].startswith("majority"))
    assert (row["rank"], row["total"], row["parus:accuracy"]) == ("", "", "50")
    assert not (tmp_path / "board" / "leaderboard_tape.md").exists()


def test_leaderboard_without_results_is_a_user_error(tmp_path):
    result = invoke("leaderboard", tmp_path, "-o", tmp_path / "board")
    assert result.exit_code == 2
    assert "no results.json" in result.output
    assert not (tmp_path / "board").exists()


@pytest.mark.parametrize(
    ("value", "text"), [(36.7, "36.7"), (58.0, "58.0"), (0.17, "0.17"), (0.4, "0.4"), (0.0, "0.0"), (-17.04, "-17.0")]
)
def test_scores_print_as_the_papers_print_them(value, text):
    assert format_score(value) == text


def test_a_run_folder_named_with_html_and_markdown_is_shown_as_text_in_the_markdown_board(tmp_path):
    run_dir = tmp_path / "<script>alert(1)</script> *bold* a|b"
    rueval.evaluate("majority", tasks=["rcb"], out=run_dir)
    result = invoke("leaderboard", run_dir, "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "board" / "leaderboard_rsg.md").read_text(encoding="utf-8")
    assert "<script>" not in markdown and "&lt;script&gt;alert(1)&lt;/script&gt; \\*bold\\* a\\|b" in markdown
    header = next(line for line in markdown.splitlines() if line.startswith("| # |"))
    row = next(line for line in markdown.splitlines() if "script" in line)
    assert row.count(" | ") == header.count(" | ")  # the name's | splits no cell


def test_runs_tied_with_the_best_ranked_run_are_marked(sample_runs, tmp_path):
    """The best-ranked run, an identical copy of it (tied: the same predictions) and the other run; ties are
    tested on the runs' predictions, so the copies keep them."""
    totals = {
        m: json.loads((d / "results.json").read_text(encoding="utf-8"))["rsg_total"] for m, d in sample_runs.items()
    }
    leader = max(totals, key=totals.__getitem__)
    other = next(model for model in totals if model != leader)
    pairs = ((leader, leader), ("copy", leader), (other, other))
    dirs = {name: as_official_run(sample_runs[model], tmp_path / "official" / name, keep=True) for name, model in pairs}
    result = invoke("leaderboard", *dirs.values(), "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    marks = {row["source"]: row["vs_leader"] for row in read_csv(tmp_path / "out" / "leaderboard_rsg.csv")}
    assert marks[str(dirs[leader])] == "leader" and marks[str(dirs["copy"])] == "tied"
    assert marks[str(dirs[other])] in ("tied", "")
    assert all(mark == "" for source, mark in marks.items() if source not in map(str, dirs.values()))  # papers' rows
    markdown = (tmp_path / "out" / "leaderboard_rsg.md").read_text(encoding="utf-8")
    assert "(copy) ≈" in markdown and "tied with the best-ranked run" in markdown


def test_ties_are_not_computed_without_predictions(runs, tmp_path):
    result = invoke("leaderboard", runs["majority"], runs["weighted-random"], "-o", tmp_path)
    assert result.exit_code == 0, result.output
    assert {row["vs_leader"] for row in read_csv(tmp_path / "leaderboard_rsg.csv")} == {""}
    assert "No ties with the best-ranked run computed" in (tmp_path / "leaderboard_rsg.md").read_text(encoding="utf-8")
