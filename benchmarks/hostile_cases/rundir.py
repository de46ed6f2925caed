"""The sweep's cases of run directories that mix or forget: --resume with other options, missing or
edited files, a full disk, damaged run.json and results.json."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

from hostile_cases.common import (
    case,
    fresh_scores,
    majority_run,
    mera_folder,
    need_root,
    read_jsonl,
    results,
    said_in_output,
    same_scores,
    scores,
    tree,
    unchanged,
    write_jsonl,
)
from hostile_cases.harness import EITHER, ERROR, OK, CaseDir, Outcome, Skip, rueval


@case("rundir", "run --resume --seed 5", ERROR, "seed 0 -> 5")
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    unchanged(c, out)
    return rueval("run", "--resume", "--seed", "5", "-o", out)


for option, value, said in (
    ("-m", "tfidf", "model 'majority' -> 'tfidf'"),
    ("--limit", "3", "limit None -> 3"),
    ("--split", "test", "split"),
    ("--slices", "all", "slices"),
    ("--tape-set", "raw", "tape_set"),
    ("--fallback", "random", "fallback"),
):

    @case("rundir", f"run --resume {option} {value}", ERROR, said)
    def _(c: CaseDir, option=option, value=value) -> list[str]:
        out = majority_run(c, c / "out")
        unchanged(c, out)
        return rueval("run", "--resume", option, value, "-o", out)


@case("rundir", "run --resume -t parus scores parus, keeps rcb, adds nothing", OK)
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    expected = scores(out)
    same_scores(c, out, expected)
    return rueval("run", "--resume", "-t", "parus", "-o", out)


@case("rundir", "run --resume -t terra (not in the run)", EITHER, "terra")
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    expected = {**scores(out), **fresh_scores(c, "-m", "majority", "-t", "terra")}
    c.check(lambda o: None if o.returncode == 2 or scores(out) == expected else f"scores {scores(out)}")
    return rueval("run", "--resume", "-t", "terra", "-o", out)


@case("rundir", "run --resume on a folder with no run", ERROR, "run.json")
def _(c: CaseDir) -> list[str]:
    (c / "empty").mkdir()
    return rueval("run", "--resume", "-o", c / "empty")


@case("rundir", "run --resume without -o", ERROR, "-o")
def _(c: CaseDir) -> list[str]:
    return rueval("run", "--resume")


for kind, path in (("predictions", "predictions/parus.jsonl"), ("task file", "tasks/parus.json")):

    @case("rundir", f"a deleted {kind} is rebuilt on rerun, and compare works", OK)
    def _(c: CaseDir, path=path) -> list[str]:
        out = majority_run(c, c / "out")
        expected, files = scores(out), tree(out)
        (out / path).unlink()
        same = (
            (lambda a, b: a == b) if path.startswith("predictions") else (lambda a, b: b is not None)
        )  # timings differ
        c.check(lambda o: None if same(files[path], tree(out).get(path)) else f"{path} not rebuilt as it was")
        same_scores(c, out, expected)
        said_in_output(c, "computing parus again")
        return rueval("run", "-m", "majority", "-t", "rcb,parus", "-o", out)

    @case("rundir", f"compare with a deleted {kind}", ERROR if kind == "predictions" else OK, "parus")
    def _(c: CaseDir, path=path) -> list[str]:  # compare reads results.json and the predictions only
        out = majority_run(c, c / "out")
        (out / path).unlink()
        return rueval("compare", out, majority_run(c, c / "other"))


@case("rundir", "an edited tasks/parus.json is computed again", OK)
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    expected = scores(out)
    task = json.loads((out / "tasks" / "parus.json").read_text(encoding="utf-8"))
    (out / "tasks" / "parus.json").write_text(json.dumps({**task, "score": 99.0}), encoding="utf-8")
    same_scores(c, out, expected)
    said_in_output(c, "computing parus again")
    return rueval("run", "-m", "majority", "-t", "rcb,parus", "-o", out)


@case("rundir", "an edited prediction is computed again", OK)
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    expected = tree(out)["predictions/parus.jsonl"]
    rows = read_jsonl(out / "predictions" / "parus.jsonl")
    rows[0]["prediction"] = 1 - rows[0]["prediction"]
    write_jsonl(out / "predictions" / "parus.jsonl", rows)
    c.check(lambda o: None if tree(out)["predictions/parus.jsonl"] == expected else "the edited prediction was kept")
    return rueval("run", "-m", "majority", "-t", "rcb,parus", "-o", out)


@case("rundir", "compare after a prediction was edited by hand", EITHER, "predictions")
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    rows = read_jsonl(out / "predictions" / "parus.jsonl")
    write_jsonl(out / "predictions" / "parus.jsonl", rows[:-1])  # a line lost
    return rueval("compare", out, majority_run(c, c / "other"))


def full_disk(c: CaseDir, size_kb: int) -> Path:
    """A tmpfs of ``size_kb`` KB (unmounted after the case)."""
    need_root()
    mount = c / "small-disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(mount)]).returncode:
        raise Skip("cannot mount a tmpfs here")
    c.cleanups.append(lambda: subprocess.run(["umount", "-l", str(mount)]))
    return mount


for free_kb in range(0, 141, 20):

    @case("rundir", f"disk full during --force ({free_kb} KB left): never a mix", EITHER, "No space left")
    def _(c: CaseDir, free_kb=free_kb) -> list[str]:
        mount = full_disk(c, 1024)
        out = c.rueval("run", "-m", "majority", "-t", "parus", "--limit", "2", "-o", mount / "out") and mount / "out"
        filler = mount / "filler"
        free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
        filler.write_bytes(b"\0" * max(0, free - free_kb * 1024))

        def coherent(o: Outcome) -> str | None:
            names = {p.name for p in out.iterdir()}
            if ("results.json" in names) != ("results_lmeval.json" in names):
                return f"one summary file without its twin: {sorted(names)}"
            if "results.json" in names:
                mine, twin = results(out), json.loads((out / "results_lmeval.json").read_text(encoding="utf-8"))
                if sorted(mine["tasks"]) != sorted(t for t in twin["results"] if t in mine["tasks"]) or len(
                    mine["tasks"]
                ) != len(twin["results"]):
                    return "results.json and results_lmeval.json are of different runs"
            filler.unlink()
            c.rueval("run", "-m", "majority", "-t", "rsg", "-o", out)
            expected = fresh_scores(c, "-m", "majority", "-t", "rsg")
            return None if scores(out) == expected else f"after freeing space: {scores(out)} != {expected}"

        c.check(coherent)
        return rueval("run", "-m", "majority", "-t", "rsg", "-o", out, "--force")


for force in ((), ("--force",), ("--resume",)):

    @case(
        "rundir",
        f"-o on a folder of one's own files {' '.join(force)}",
        ERROR,
        "run.json" if force == ("--resume",) else "not a rueval run",
    )
    def _(c: CaseDir, force=force) -> list[str]:
        mine = c / "mine"
        (mine / "tasks").mkdir(parents=True)
        (mine / "tasks" / "todo.txt").write_text("mine", encoding="utf-8")
        (mine / "notes.txt").write_text("mine", encoding="utf-8")
        unchanged(c, mine)
        return rueval("run", "-m", "majority", "-t", "rcb", "-o", mine, *force)


@case("rundir", "submit -o into a folder", ERROR, "sub")
def _(c: CaseDir) -> list[str]:
    (c / "sub").mkdir()
    (c / "sub" / "mine.txt").write_text("mine", encoding="utf-8")
    unchanged(c, c / "sub")
    return rueval("submit", "-m", "majority", "-o", c / "sub")


@case("rundir", "report -o onto a run directory", ERROR, "out")
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    unchanged(c, out)
    return rueval("report", out, "-o", out)


RUN_JSON_DAMAGE = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "tasks 123": lambda text: json.dumps({**json.loads(text), "tasks": 123}),
    "tasks []": lambda text: json.dumps({**json.loads(text), "tasks": []}),
    "seed -5": lambda text: json.dumps({**json.loads(text), "seed": -5}),
    "limit 'nan'": lambda text: json.dumps({**json.loads(text), "limit": "nan"}),
    "limit NaN": lambda text: json.dumps({**json.loads(text), "limit": math.nan}),
    "model 5": lambda text: json.dumps({**json.loads(text), "model": 5}),
    "a list": lambda text: "[1, 2]",
    "files a string": lambda text: json.dumps({**json.loads(text), "files": "x"}),
    "binary": lambda text: "\x00\xff" * 10,
}
for label, damage in RUN_JSON_DAMAGE.items():
    for args in (("--resume",), ("-m", "majority", "-t", "rcb,parus")):

        @case("rundir", f"run.json {label}, then run {' '.join(args)}", ERROR, "run.json")
        def _(c: CaseDir, damage=damage, args=args) -> list[str]:
            out = majority_run(c, c / "out")
            spec = out / "run.json"
            spec.write_text(damage(spec.read_text(encoding="utf-8")), encoding="utf-8", errors="surrogateescape")
            unchanged(c, out)
            return rueval("run", *args, "-o", out)


@case("rundir", "run.json a folder, then --resume", ERROR, "run.json")
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    (out / "run.json").unlink()
    (out / "run.json").mkdir()
    return rueval("run", "--resume", "-o", out)


@case("rundir", "run.json deleted beside results.json, then the same run", EITHER, "run.json")
def _(c: CaseDir) -> list[str]:
    out = majority_run(c, c / "out")
    expected = scores(out)
    (out / "run.json").unlink()
    c.check(lambda o: None if o.returncode == 2 or scores(out) == expected else f"scores {scores(out)}")
    return rueval("run", "-m", "majority", "-t", "rcb,parus", "-o", out)


@case("rundir", "run.json truncated, then export", ERROR, "run.json")
def _(c: CaseDir) -> list[str]:
    root = mera_folder(c, [50, 51])
    c.rueval("run", "-m", "majority", "-t", "rcb", "--data", root, "-o", c / "run")
    spec = c / "run" / "run.json"
    spec.write_text(spec.read_text(encoding="utf-8")[:40], encoding="utf-8")
    c.nothing_written(c / "sub.zip")
    return rueval("export", c / "run", "-o", c / "sub.zip")


RESULTS_DAMAGE = {
    "truncated": lambda d: json.dumps(d)[:200],
    "score NaN": lambda d: json.dumps(
        {**d, "tasks": {**d["tasks"], "parus": {**d["tasks"]["parus"], "score": math.nan}}}
    ),
    "score 'abc'": lambda d: json.dumps(
        {**d, "tasks": {**d["tasks"], "parus": {**d["tasks"]["parus"], "score": "abc"}}}
    ),
    "metric Infinity": lambda d: json.dumps(
        {**d, "tasks": {**d["tasks"], "parus": {**d["tasks"]["parus"], "metrics": {"accuracy": math.inf}}}}
    ),
    "tasks a list": lambda d: json.dumps({**d, "tasks": [1]}),
}
for label, damage in RESULTS_DAMAGE.items():
    for command in ("report", "leaderboard", "compare"):

        @case("rundir", f"results.json {label}, then {command}", ERROR, "results.json")
        def _(c: CaseDir, damage=damage, command=command) -> list[str]:
            out = majority_run(c, c / "out")
            (out / "results.json").write_text(damage(results(out)), encoding="utf-8")
            tail = (majority_run(c, c / "other"),) if command == "compare" else ("-o", c / "made")
            return rueval(command, out, *tail)


@case("rundir", "compare a --limit 5 run with a full one", ERROR, "different data")
def _(c: CaseDir) -> list[str]:
    return rueval("compare", majority_run(c, c / "a", "--limit", "5"), majority_run(c, c / "b"))


@case("rundir", "compare a run with a folder that is not a run", ERROR, "results.json")
def _(c: CaseDir) -> list[str]:
    (c / "nothing").mkdir()
    return rueval("compare", majority_run(c, c / "a"), c / "nothing")


@case("rundir", "two runs into one -o at once", OK, timeout=180)
def _(c: CaseDir) -> list[str]:
    out = c / "out"
    expected = fresh_scores(c, "-m", "heuristic", "-t", "rcb,parus,terra")
    argv = rueval("run", "-m", "heuristic", "-t", "rcb,parus,terra", "-o", out)
    env = {**os.environ, "RUEVAL_CACHE_DIR": str(c / "cache")}
    other = subprocess.Popen(argv, cwd=c.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def both(o: Outcome) -> str | None:
        text = other.communicate(timeout=120)[0].decode(errors="replace")
        if "Traceback" in text or other.returncode not in (0, 2):
            return f"the other run: exit {other.returncode}: {text[-300:]}"
        return None if scores(out) == expected else f"scores {scores(out)}, a single run gives {expected}"

    c.check(both)
    return argv
