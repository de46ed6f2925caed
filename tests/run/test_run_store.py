"""The run directory: nothing overwritten silently, resume from anywhere, damaged files reported,
interrupted runs say how to resume, reused and partial results marked as such."""

import errno
import json
import os
import tempfile

from rueval.run import pipeline


def results(out):
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_another_runs_results_are_never_overwritten_silently(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("run", "-t", "rcb,terra").exit_code == 0  # README's first command, into runs/majority
    before = (tmp_path / "runs" / "majority" / "results.json").read_bytes()
    refused = cli("run", "-t", "tape", "--slices", "all", "-o", "runs/majority")
    assert refused.exit_code == 2 and "runs/majority" in refused.stderr and "--force" in refused.stderr
    assert "Traceback" not in refused.output and len(refused.stderr.strip().splitlines()) == 1
    assert (tmp_path / "runs" / "majority" / "results.json").read_bytes() == before


def test_same_settings_merge_and_say_so(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("run", "-t", "rcb", "-o", out).exit_code == 0
    merged = cli("run", "-t", "parus", "-o", out)
    assert merged.exit_code == 0 and "kept 1 task(s) of the earlier run with the same settings: rcb" in merged.stdout
    summary = results(out)
    assert list(summary["tasks"]) == ["rcb", "parus"] and summary["notes"]
    again = cli("run", "-t", "parus", "-o", out)
    assert "(reused)" in again.stdout and results(out)["reused"] == ["parus"]
    assert results(out)["industrial"] == {} and "every task was reused" in again.stdout  # no old timings as new


def test_resume_works_from_any_working_directory(cli, tmp_path, monkeypatch, data_dir):
    monkeypatch.chdir(data_dir.parent)
    assert cli("run", "-t", "rcb", "--data", "data", "-o", "out").exit_code == 0
    saved = json.loads((tmp_path / "out" / "run.json").read_text())
    assert saved["data"] == str(data_dir)  # absolute: the run can be resumed from elsewhere
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    resumed = cli("run", "--resume", "-o", tmp_path / "out")
    assert resumed.exit_code == 0, resumed.stderr
    assert results(tmp_path / "out")["reused"] == ["rcb"]


def test_damaged_files_are_reported_with_their_path(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("run", "-t", "rcb,parus", "-o", out).exit_code == 0
    task_file = out / "tasks" / "rcb.json"
    task_file.write_text(task_file.read_text()[:40])  # truncated
    rerun = cli("run", "-t", "rcb,parus", "-o", out)
    assert rerun.exit_code == 0 and f"{task_file}" in rerun.stdout and "computing rcb again" in rerun.stdout
    assert results(out)["reused"] == ["parus"] and json.loads(task_file.read_text())["n"] > 0
    (out / "run.json").write_text('{"options": [1, 2')
    (out / "results.json").unlink()
    broken = cli("run", "--resume", "-o", out)
    assert broken.exit_code == 2 and str(out / "run.json") in broken.stderr and "Traceback" not in broken.output


def test_an_output_path_that_is_a_file_is_refused_before_any_work(cli, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("not a directory")
    refused = cli("run", "-t", "rcb", "-o", taken)
    assert refused.exit_code == 2 and "is a file" in refused.stderr and taken.read_text() == "not a directory"


def test_ctrl_c_says_how_to_resume_and_exits_130(cli, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(pipeline, "predict_tasks", interrupted)
    result = cli("run", "-t", "rcb", "-o", tmp_path / "out")
    assert result.exit_code == 130
    assert (
        result.stderr.strip()
        == f"interrupted: finished work is kept; continue with: rueval run --resume -o {tmp_path / 'out'}"
    )


def test_limited_runs_are_marked_partial(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "-t", "rcb", "--limit", "5", "-o", out)
    assert result.exit_code == 0 and "partial: first 5 records" in result.stdout
    assert results(out)["partial"] is True
    board = cli("leaderboard", out, "-o", tmp_path / "board")
    row = next(line for line in board.stdout.splitlines() if "partial: --limit 5" in line)
    assert row.startswith("|  |")  # shown, but given no rank among the papers' rows
    assert os.path.exists(tmp_path / "board" / "leaderboard_rsg.md")


def test_output_under_a_file_or_unwritable_ends_in_one_line(cli, tmp_path, monkeypatch):
    taken = tmp_path / "taken"
    taken.write_text("a file")
    under = cli("run", "-t", "rcb", "-o", taken / "out")
    assert under.exit_code == 2 and f"{taken / 'out' / 'run.json'}: cannot be written" in under.stderr

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)  # as root, chmod cannot take the right away
    refused = cli("run", "-t", "rcb", "-o", tmp_path / "out")
    assert refused.exit_code == 2 and "cannot be written (Permission denied)" in refused.stderr
    assert "Traceback" not in refused.output and len(refused.stderr.strip().splitlines()) == 1


def test_a_full_disk_ends_in_one_line_naming_the_file(cli, tmp_path, monkeypatch):
    replace = os.replace

    def full(source, target):
        if str(target).endswith("results.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return replace(source, target)

    monkeypatch.setattr(os, "replace", full)
    result = cli("run", "-t", "rcb", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "results.json: cannot be written (No space left on device)" in result.stderr
    assert not list((tmp_path / "out").glob(".*.tmp")) and (tmp_path / "out" / "tasks" / "rcb.json").exists()


def test_max_line_mb_refuses_longer_lines_before_any_work(cli, tmp_path, data_dir):
    val = data_dir / "RCB" / "val.jsonl"
    record = json.loads(val.read_text(encoding="utf-8").splitlines()[0])
    record["premise"] = "Длинная посылка. " * 100  # over 1 KB of UTF-8
    val.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    refused = cli("run", "-t", "rcb", "--data", data_dir, "--max-line-mb", "0.001", "-o", tmp_path / "out")
    assert refused.exit_code == 2 and "longer than 1048 bytes" in refused.stderr and "RCB" in refused.stderr
    assert not (tmp_path / "out" / "results.json").exists()
