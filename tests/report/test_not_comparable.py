"""Runs the papers' rows cannot be compared with are shown unranked, marked, in the terminal, the
Markdown and CSV boards and the HTML report: runs on the bundled samples, runs of a split with another
record count than the official files', and (like --limit runs) none ranked. Runs of MERA's files get
no board at all: MERA has no papers' rows."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

from mera_files import rcb
from typer.testing import CliRunner

from rueval.cli import app
from rueval.results import RunResult
from rueval.tasks import MERA, RSG


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def board_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def terminal_row(output: str, name: str) -> list[str]:
    """The cells of the printed Markdown row whose name cell starts with ``name``."""
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[1].strip("*").startswith(name):
            return cells
    raise AssertionError(f"no row {name!r} in:\n{output}")


def html_row(page: str, name: str) -> str:
    return next(row for row in re.findall(r"<tr class=\"run\">.*?</tr>", page) if name in row)


def edited(run_dir: Path, out: Path, **settings: object) -> Path:
    """A copy of a run whose results.json has ``settings`` changed (where its data came from)."""
    shutil.copytree(run_dir, out)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (out / "results.json").write_text(json.dumps({**results, **settings}), encoding="utf-8")
    return out


def test_runs_on_the_bundled_samples_are_marked_and_unranked_everywhere(sample_runs, tmp_path):
    runs = list(sample_runs.values())
    result = invoke("leaderboard", *runs, "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    mark = "majority (not comparable: bundled samples)"
    assert terminal_row(result.output, "majority")[:2] == ["", f"**{mark}**"]  # no rank
    rows = board_rows(tmp_path / "board" / "leaderboard_rsg.csv")
    assert {row["name"]: row["rank"] for row in rows if row["kind"] == "run"} == {
        mark: "",
        "weighted-random (not comparable: bundled samples)": "",
    }
    papers = [row["rank"] for row in rows if row["kind"] != "run" and row["total"]]
    assert papers == [str(i) for i in range(1, len(papers) + 1)]  # the papers' rows ranked among themselves
    markdown = (tmp_path / "board" / "leaderboard_rsg.md").read_text(encoding="utf-8")
    assert f"| **{mark}** |" in markdown
    assert f"- {mark}: not comparable with the papers' rows, scored on rueval's bundled samples" in markdown
    assert invoke("report", *runs, "-o", tmp_path / "report.html").exit_code == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html_row(page, mark).startswith(f'<tr class="run"><td></td><td class=text>{mark}</td>')


def test_a_run_whose_split_has_another_record_count_than_the_official_one_is_marked(sample_runs, tmp_path):
    run = edited(sample_runs["majority"], tmp_path / "own-copy", data="/data/my-rsg-copy")
    records = RunResult.read(run).tasks["rcb"].records
    official = RSG.official_count("rcb", "val")
    assert records != official
    result = invoke("leaderboard", run, "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    mark = "majority (not comparable: record counts)"
    assert terminal_row(result.output, "majority")[:2] == ["", f"**{mark}**"]
    (row,) = [row for row in board_rows(tmp_path / "board" / "leaderboard_rsg.csv") if row["kind"] == "run"]
    assert (row["name"], row["rank"]) == (mark, "")
    markdown = (tmp_path / "board" / "leaderboard_rsg.md").read_text(encoding="utf-8")
    assert f"rcb's val split has {records} records, the official files {official:,}" in markdown
    assert invoke("report", run, "-o", tmp_path / "report.html").exit_code == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html_row(page, mark).startswith('<tr class="run"><td></td>')
    assert f"rcb&#x27;s val split has {records} records" in page


def test_a_results_file_without_record_counts_is_read_and_its_nested_tasks_counted_unknown(sample_runs, tmp_path):
    """results.json before rueval recorded records: a flat task's records are its n, a nested task's unknown."""
    run = edited(sample_runs["majority"], tmp_path / "older", data="/data/rsg")
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    for task in results["tasks"].values():
        del task["records"]
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    read = RunResult.read(run)
    assert read.tasks["rcb"].records == read.tasks["rcb"].n and read.tasks["muserc"].records is None
    result = invoke("leaderboard", run, "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "board" / "leaderboard_rsg.md").read_text(encoding="utf-8")
    assert "muserc's val split has an unknown number of records, the official files 100" in markdown


def test_a_run_of_meras_files_is_ranked_against_no_papers_rows(tmp_path):
    mera = tmp_path / "mera"
    (mera / "RCB").mkdir(parents=True)
    splits = {"train": [rcb(1, "1"), rcb(2, "1"), rcb(3, "2")], "test": [rcb(7, "2"), rcb(8, "1")]}
    (mera / "RCB" / "task.json").write_text(json.dumps({"data": splits}, ensure_ascii=False), encoding="utf-8")
    result = invoke("run", "-m", "majority", "-t", "rcb", "--data", mera, "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert RunResult.read(tmp_path / "run").tasks["rcb"].benchmark == MERA.name  # MERA's scores, not RSG's
    result = invoke("leaderboard", tmp_path / "run", "-o", tmp_path / "board")
    assert result.exit_code == 0, result.output
    assert "leaderboard" not in result.output and not (tmp_path / "board").exists()
