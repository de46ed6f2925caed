"""A run directory is one run: --resume with an option that differs from the recorded run is an error
listing the differences; every finished task's files are recorded in run.json by their checksums, so
a missing, edited or half-written one is computed again (and said so); the summary files are written
together; -o never takes a folder of the user's own files; a damaged run.json is an error wherever it
is read."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path

import pytest

from rueval.core import files
from rueval.core.errors import RuevalError


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def recorded(out: Path) -> dict:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


@pytest.fixture
def run_dir(cli, tmp_path) -> Path:
    out = tmp_path / "out"
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", out)
    assert result.exit_code == 0, result.output
    return out


def test_run_json_records_each_finished_tasks_files_by_their_checksums(run_dir):
    assert recorded(run_dir)["files"] == {
        task: {name: _sha256(run_dir / name) for name in (f"predictions/{task}.jsonl", f"tasks/{task}.json")}
        for task in ("rcb", "parus")
    }


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_resume_with_options_that_differ_from_the_run_is_an_error_listing_them(cli, run_dir):
    before = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}
    result = cli("run", "--resume", "-o", run_dir, "--seed", "5", "--limit", "3")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --resume continues the run in {run_dir} as it was started, and these differ from it: "
        "limit None -> 3, seed 0 -> 5; give none of these to continue it, or a new -o for a new run\n"
    )
    assert {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()} == before
    heuristic = cli("run", "-m", "heuristic", "-t", "rcb", "-o", run_dir.parent / "h")
    assert heuristic.exit_code == 0
    refused = cli("run", "--resume", "-o", run_dir.parent / "h", "--fallback", "random")
    assert refused.exit_code == 2 and "solver_options.fallback 'majority' -> 'random'" in refused.stderr
    # a new run into it says the same of what differs
    other = cli("run", "-m", "heuristic", "-t", "rcb", "--fallback", "random", "-o", run_dir.parent / "h")
    assert other.exit_code == 2 and other.stderr == (
        f"error: {run_dir.parent / 'h'}: holds the results of another run (solver_options.fallback 'majority' -> "
        "'random'); give a new -o, or --force to replace them\n"
    )


def test_resume_with_options_as_recorded_or_that_change_no_number_continues_the_run(cli, run_dir):
    result = cli("run", "--resume", "-o", run_dir, "--seed", "0", "-t", "rcb,parus", "--log-samples")
    assert result.exit_code == 0, result.output
    assert list((run_dir / "samples").glob("samples_rcb_*.jsonl"))  # --log-samples applies to the rest of the run
    assert recorded(run_dir)["log_samples"] is True and recorded(run_dir)["seed"] == 0


def test_resume_naming_fewer_tasks_scores_those_and_keeps_the_others(cli, run_dir):
    result = cli("run", "--resume", "-o", run_dir, "-t", "parus")
    assert result.exit_code == 0
    assert "kept 1 task(s) of the earlier run with the same settings: rcb" in result.stdout
    assert list(results(run_dir)["tasks"]) == ["rcb", "parus"] and results(run_dir)["reused"] == ["parus"]


def test_a_deleted_predictions_file_is_rebuilt_and_said_so(cli, run_dir):
    predictions = run_dir / "predictions" / "parus.jsonl"
    kept = predictions.read_bytes()
    predictions.unlink()
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", run_dir)
    assert result.exit_code == 0
    assert f"{predictions}: missing; computing parus again" in result.stdout
    assert predictions.read_bytes() == kept and results(run_dir)["reused"] == ["rcb"]
    assert cli("compare", run_dir, run_dir).exit_code == 0


def test_an_edited_task_file_is_computed_again_not_reused(cli, run_dir):
    task_file = run_dir / "tasks" / "parus.json"
    computed = json.loads(task_file.read_text(encoding="utf-8"))
    task_file.write_text(json.dumps({**computed, "score": 99.0}), encoding="utf-8")
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", run_dir)
    assert result.exit_code == 0
    assert f"{task_file}: changed since the run wrote it; computing parus again" in result.stdout
    assert results(run_dir)["tasks"]["parus"]["score"] == computed["score"]


def test_a_task_whose_files_were_written_but_not_committed_is_computed_again(cli, run_dir):
    """A kill after a task's files are written and before run.json records them: the task is not finished."""
    spec = recorded(run_dir)
    del spec["files"]["rcb"]
    (run_dir / "run.json").write_text(json.dumps(spec), encoding="utf-8")
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", run_dir)
    assert result.exit_code == 0
    assert "not recorded in run.json (an unfinished write); computing rcb again" in result.stdout
    assert results(run_dir)["reused"] == ["parus"] and "rcb" in recorded(run_dir)["files"]


def test_a_full_disk_while_writing_the_summary_leaves_both_summary_files_as_they_were(cli, run_dir, monkeypatch):
    before = {name: (run_dir / name).read_bytes() for name in ("results.json", "results_lmeval.json")}
    write_text = Path.write_text

    def full(self, text, *args, **kwargs):
        if self.name.startswith(".results_lmeval.json"):  # the twin's temporary file, written second
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_text(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", run_dir, "--limit", "0.5", "--force")
    assert result.exit_code == 2 and "No space left on device" in result.stderr
    monkeypatch.undo()
    for name in before:  # --force cleared the other run's pair; neither file of the new pair was put in place
        assert not (run_dir / name).exists()
    assert not list(run_dir.glob(".*.tmp"))
    again = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", run_dir, "--limit", "0.5")
    assert again.exit_code == 0 and results(run_dir)["reused"] == ["rcb", "parus"]  # the tasks were committed
    assert (run_dir / "results_lmeval.json").is_file()


def test_the_summary_pair_is_written_whole_before_either_replaces_its_file(tmp_path, monkeypatch):
    first, second = tmp_path / "results.json", tmp_path / "results_lmeval.json"
    files.write_json_files({first: {"a": 1}, second: {"b": 1}})
    replace = os.replace
    moved = []
    monkeypatch.setattr(os, "replace", lambda source, target: (moved.append(target), replace(source, target)))
    with pytest.raises(RuevalError, match="results_lmeval.json: field 'b' is nan"):
        files.write_json_files({first: {"a": 2}, second: {"b": math.nan}})  # the second cannot be written
    assert moved == [] and json.loads(first.read_text()) == {"a": 1} and json.loads(second.read_text()) == {"b": 1}


def test_o_on_a_folder_of_ones_own_files_is_refused_and_left_untouched(cli, tmp_path):
    mine = tmp_path / "mine"
    (mine / "tasks").mkdir(parents=True)
    (mine / "tasks" / "todo.txt").write_text("mine", encoding="utf-8")
    (mine / "notes.txt").write_text("mine", encoding="utf-8")
    for force in ((), ("--force",)):
        result = cli("run", "-m", "majority", "-t", "rcb", "-o", mine, *force)
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: -o {mine}: holds files that are not a rueval run (notes.txt, tasks); give an empty or new -o\n"
        )
    assert sorted(p.name for p in mine.rglob("*")) == ["notes.txt", "tasks", "todo.txt"]
    (tmp_path / "empty").mkdir()
    assert cli("run", "-m", "majority", "-t", "rcb", "-o", tmp_path / "empty").exit_code == 0


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda text: text[: len(text) // 2], "not valid JSON"),
        (lambda text: json.dumps({**json.loads(text), "tasks": 123}), "field 'tasks': expected a list, got 123"),
        (lambda text: json.dumps({**json.loads(text), "files": {"rcb": 5}}), "field 'files.rcb': expected an object"),
    ],
    ids=["truncated", "tasks-not-a-list", "checksums-not-an-object"],
)
def test_a_damaged_run_json_is_an_error_for_every_command_that_reads_it(cli, run_dir, damage, said):
    spec = run_dir / "run.json"
    spec.write_text(damage(spec.read_text(encoding="utf-8")), encoding="utf-8")
    for args in (("--resume",), ("-m", "majority", "-t", "rcb,parus")):
        result = cli("run", *args, "-o", run_dir)
        assert result.exit_code == 2 and said in result.stderr and str(spec) in result.stderr, result.output
        assert len(result.stderr.splitlines()) == 1
    replaced = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", run_dir, "--force")
    assert replaced.exit_code == 0 and recorded(run_dir)["tasks"] == ["rcb", "parus"]


@pytest.mark.parametrize("replace", ["deleted", "a pipe", "a folder"])
def test_a_run_json_missing_or_not_a_file_beside_results_json_is_an_error_not_another_run(cli, run_dir, replace):
    """Nothing else records the run's settings and files: never a made-up difference ("data 'bundled
    samples' -> None"), never a read that blocks on a pipe."""
    spec = run_dir / "run.json"
    spec.unlink()
    if replace == "a pipe":
        os.mkfifo(spec)
    elif replace == "a folder":
        spec.mkdir()
    said = {"deleted": "missing beside results.json", "a pipe": "a named pipe", "a folder": "a folder where"}[replace]
    for args in (("--resume",), ("-m", "majority", "-t", "rcb,parus")):
        result = cli("run", *args, "-o", run_dir)
        expected = "not found" if args == ("--resume",) and replace == "deleted" else said
        assert result.exit_code == 2 and result.stderr.startswith(f"error: {spec}: {expected}"), result.stderr
        assert len(result.stderr.splitlines()) == 1
    if replace != "a folder":  # --force replaces the run (a folder of run.json's name is the user's to remove)
        assert cli("run", "-m", "majority", "-t", "rcb,parus", "-o", run_dir, "--force").exit_code == 0
        assert recorded(run_dir)["tasks"] == ["rcb", "parus"]


def test_the_output_folder_option_takes_any_path_or_says_why_not(cli, tmp_path):
    too_long = tmp_path / ("a" * 300)
    result = cli("run", "-m", "majority", "-t", "parus", "-o", too_long)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"error: -o {too_long}: cannot be used (File name too long)"
    (tmp_path / "file").write_text("mine", encoding="utf-8")
    result = cli("run", "-m", "majority", "-t", "parus", "-o", tmp_path / "file")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"error: -o {tmp_path / 'file'}: is a file, not a directory"


def test_a_limit_beyond_every_split_cuts_nothing_and_the_run_is_not_partial(cli, tmp_path):
    result = cli("run", "-m", "majority", "-t", "rcb,parus", "--limit", "1e30", "-o", tmp_path / "out")
    assert result.exit_code == 0 and "cut no task short: these are the benchmark's scores" in result.stdout
    summary = results(tmp_path / "out")
    assert summary["partial"] is False and summary["limit"] is None
    full = cli("run", "-m", "majority", "-t", "rcb,parus", "-o", tmp_path / "full")
    assert full.exit_code == 0
    assert {t: r["score"] for t, r in summary["tasks"].items()} == {
        t: r["score"] for t, r in results(tmp_path / "full")["tasks"].items()
    }
    cut = cli("run", "-m", "majority", "-t", "rcb,parus", "--limit", "20", "-o", tmp_path / "cut")
    assert results(tmp_path / "cut")["partial"] is (cut.exit_code == 0 and "cut no task" not in cut.stdout)


def test_resume_never_gives_consent_to_run_a_models_code_for_the_user(cli, tiny_gpt2_dir, tmp_path):
    """A run folder can be shared: its run.json saying --trust-remote-code must not make a bare
    --resume run the model's own code; the user who resumes gives the consent again."""
    out = tmp_path / "shared"
    started = cli("run", "-m", f"hf:{tiny_gpt2_dir}", "--trust-remote-code", "-t", "rcb", "--limit", "2", "-o", out)
    assert started.exit_code == 0, started.output
    assert recorded(out)["solver_options"]["trust_remote_code"] is True
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    for given in ((), ("-t", "rcb")):
        refused = cli("run", "--resume", "-o", out, *given)
        assert refused.exit_code == 2
        assert refused.stderr == (
            f"error: {out / 'run.json'}: solver_options.trust_remote_code: the run was started with "
            "--trust-remote-code; --resume does not give that consent again for you: add --trust-remote-code "
            "to run that code\n"
        )
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    again = cli("run", "--resume", "-o", out, "--trust-remote-code")
    assert again.exit_code == 0, again.output
