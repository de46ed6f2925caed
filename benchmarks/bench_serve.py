"""The leaderboard service's figures: scoring a full RSG submission, the board page's latency, and the
tied-with-leader marks' recomputation.

    python benchmarks/bench_serve.py [--gold DIR] [--submissions 1000] [--requests 200] [--standings 100]
        [--keep DIR]

Not part of the test suite. Without --gold it first writes an RSG gold of the official sizes as
benchmarks/bench_fullsize.py generates them (the same generator, every test file labelled).

1. Scoring: the zip `rueval submit -m heuristic` writes for that gold, checked and scored as a
   worker does it (rueval.serve.upload + rueval.serve.grading: metrics, bootstrap intervals, slices,
   the paired tests against the majority class and the heuristics, the rules' agreement), with the
   reference models computed once beforehand as `rueval serve` does at start. CPU time (this
   process: user + system) and wall time, the median of --runs; the HTML report's figures, drawn when
   a report is first opened, are timed apart.
2. The board: the same store holding --submissions public scored submissions (copies of that one
   with other totals), `rueval serve --workers 0` on it, then --requests sequential GETs of the board page
   and of /api/leaderboard from this process over loopback: median and 95th percentile latency.
3. The standings: a worker's recomputation of the tied-with-leader marks (rueval.serve.standings) of a
   board of --standings public full-size submissions (copies of that one with other scores, each read
   again from its stored zip), as it runs when its queue is empty and the public set has changed: CPU
   and wall time.

Results go to benchmarks/results/bench_serve.json and a Markdown table to bench_serve.md and stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_fullsize  # beside this script: the full-size data generator
import httpx
from results_file import write_results

from rueval.run.spec import RunSpec
from rueval.run.submission import write_submission
from rueval.serve import baselines
from rueval.serve.auth import add_team
from rueval.serve.board import summary_of
from rueval.serve.db import Database, Submission, Team, Upload, database_url
from rueval.serve.gold import Gold
from rueval.serve.grading import score_submission
from rueval.serve.store import Store
from rueval.serve.upload import check_submission
from rueval.serve.worker import Worker
from rueval.tasks import RSG

OUT = Path(__file__).parent / "results" / "bench_serve.json"
SECRET = secrets.token_bytes(32)  # the board's secret (rueval.serve.secret): the teams here send no token
TARGET_CPU_S = 10.0  # issue #26: a full RSG submission scored within 10 s of CPU
TARGET_BOARD_MS = 200.0  # and the board with 1,000 submissions answering in under 200 ms (median)


def write_gold(folder: Path) -> dict[str, Any]:
    """The RSG tasks at their official sizes, the test files labelled (a gold)."""
    rsg = {task.name for task in RSG.tasks}
    sizes, unlabelled = bench_fullsize.SIZES, bench_fullsize.unlabelled
    bench_fullsize.SIZES = {task: size for task, size in sizes.items() if task in rsg}
    bench_fullsize.unlabelled = lambda record: record
    try:
        written = bench_fullsize.generate(folder, 1.0, None)
    finally:
        bench_fullsize.SIZES, bench_fullsize.unlabelled = sizes, unlabelled
    for split in ("train", "val", "test"):
        number_queries(folder / "RuCoS" / f"{split}.jsonl")
    return written


def number_queries(path: Path) -> None:
    """RuCoS queries numbered across the file, as the official files number them (the generator
    numbers them within each passage, which leaves a submission's query ids ambiguous)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    count = 0
    for record in records:
        for query in record["qas"]:
            query["idx"], count = count, count + 1
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def timed(function, *args) -> tuple[Any, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = function(*args)
    return result, time.process_time() - cpu, time.perf_counter() - wall


def score_once(data: bytes, gold: Gold, references: baselines.Baselines):
    return score_submission(gold, check_submission(data, gold), references, "bench", SECRET)


def scoring(gold_dir: Path, work: Path, runs: int) -> tuple[list[dict[str, Any]], Any, bytes]:
    gold, load_cpu, load_wall = timed(Gold.load, gold_dir)
    store = work / "store"
    db = Database(database_url(None, store))
    references, ref_cpu, ref_wall = timed(baselines.ensure, db, gold)
    zip_path = work / "heuristic.zip"
    write_submission(RunSpec.create("rsg", "heuristic", data=str(gold_dir)), zip_path)
    data = zip_path.read_bytes()
    samples = [timed(score_once, data, gold, references) for _ in range(runs)]
    scored = samples[0][0]
    run_dir = Store(store).report_dir(1)
    scored.run.write(run_dir)
    _, report_cpu, report_wall = timed(Store(store).report, run_dir)
    items = sum(len(g.examples) for g in gold.tasks.values())
    rows = [
        {"step": "read the gold (start)", "cpu_s": load_cpu, "wall_s": load_wall},
        {"step": "reference models on the gold (start, once per gold)", "cpu_s": ref_cpu, "wall_s": ref_wall},
        {
            "step": f"score a full RSG submission ({items:,} test items, 9 tasks)",
            "cpu_s": statistics.median(s[1] for s in samples),
            "wall_s": statistics.median(s[2] for s in samples),
            "runs": runs,
            "target_cpu_s": TARGET_CPU_S,
        },
        {"step": "draw its HTML report (when first opened)", "cpu_s": report_cpu, "wall_s": report_wall},
    ]
    db.close()
    return rows, scored, data


def fill_board(store: Path, scored, data: bytes, count: int, gold: str) -> None:
    """``count`` public scored submissions from 20 teams, copies of one with other totals."""
    db = Database(database_url(None, store))
    sha256 = Store(store).put_upload(data)
    for i in range(20):
        add_team(db, f"team {i}", SECRET)
    rng = random.Random(0)
    with db.session() as session:
        session.add(Upload(sha256=sha256, size=len(data), created=time.time()))
        team_ids = [team.id for team in session.query(Team)]
        for i in range(count):
            tasks = {name: {**e, "score": e["score"] + rng.uniform(-5, 5)} for name, e in scored.tasks.items()}
            total = statistics.fmean(entry["score"] for entry in tasks.values())
            session.add(
                Submission(
                    team_id=team_ids[i % len(team_ids)],
                    name=f"submission {i}",
                    public=True,
                    status="done",
                    upload=sha256,
                    gold=gold,
                    created=time.time(),
                    finished=time.time(),
                    total=total,
                    partial=False,
                    results=json.dumps(tasks),
                    summary=json.dumps(summary_of(tasks)),
                    ignored="[]",
                )  # fmt: skip
            )
    db.close()


def standings(gold_dir: Path, store: Path, scored, data: bytes, count: int) -> list[dict[str, Any]]:
    gold = Gold.load(gold_dir)
    fill_board(store, scored, data, count, gold.fingerprint)
    db = Database(database_url(None, store))
    worker = Worker(db, gold, Store(store), secret=SECRET)  # the reference models are computed here, not timed
    _, cpu, wall = timed(worker.refresh_standings)
    db.close()
    return [{"step": f"recompute the standings of {count:,} public submissions (worker)", "cpu_s": cpu, "wall_s": wall}]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def board_latency(gold_dir: Path, store: Path, requests: int) -> list[dict[str, Any]]:
    port = free_port()
    command = [sys.executable, "-m", "rueval", "serve", "--gold", str(gold_dir), "--store", str(store)]
    command += ["--port", str(port), "--workers", "0"]
    server = subprocess.Popen(command, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
    rows = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(600):
                try:
                    client.get("/api/leaderboard")
                    break
                except httpx.TransportError:
                    time.sleep(0.5)
            for path in ("/", "/api/leaderboard"):
                for _ in range(5):  # warm up
                    client.get(path)
                times = []
                for _ in range(requests):
                    started = time.perf_counter()
                    answer = client.get(path)
                    times.append(1000 * (time.perf_counter() - started))
                    assert answer.status_code == 200
                times.sort()
                rows.append(
                    {
                        "step": f"GET {path} with the board's submissions",
                        "median_ms": statistics.median(times),
                        "p95_ms": times[int(0.95 * len(times)) - 1],
                        "requests": requests,
                        "bytes": len(answer.content),
                        "target_median_ms": TARGET_BOARD_MS,
                    }
                )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    return rows


def markdown(rows: list[dict[str, Any]], submissions: int) -> str:
    lines = ["| step | CPU s | wall s | median ms | p95 ms |", "|---|---:|---:|---:|---:|"]
    for row in rows:
        cells = [row.get("cpu_s"), row.get("wall_s"), row.get("median_ms"), row.get("p95_ms")]
        shown = ["" if v is None else f"{v:.2f}" if v < 10 else f"{v:.1f}" for v in cells]
        step = row["step"].replace("the board's submissions", f"{submissions:,} public submissions")
        lines.append(f"| {step} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", type=Path, help="a gold directory to measure on instead of generating one")
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--standings", type=int, default=100, help="public submissions whose marks are recomputed")
    parser.add_argument("--runs", type=int, default=3, help="scorings of the submission (the median is kept)")
    parser.add_argument("--keep", type=Path, help="write the gold and the store here and keep them")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rueval-bench-serve-") as scratch:
        work = args.keep or Path(scratch)
        gold_dir, sizes = args.gold, None
        if gold_dir is None:
            gold_dir = work / "gold"
            sizes = write_gold(gold_dir)
        rows, scored, data = scoring(gold_dir, work, args.runs)
        store = work / "store"  # the reference models are stored there already: the server starts at once
        fill_board(store, scored, data, args.submissions, Gold.load(gold_dir).fingerprint)
        rows += board_latency(gold_dir, store, args.requests)
        rows += standings(gold_dir, work / "standings", scored, data, args.standings)
    for row in rows:
        print(json.dumps(row), file=sys.stderr)
    described = str(args.gold) if args.gold else "generated by bench_fullsize.py at the official sizes, test labelled"
    write_results(args.out, rows, gold=described, sizes=sizes, submissions=args.submissions, standings=args.standings)
    table = markdown(rows, args.submissions)
    args.out.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
