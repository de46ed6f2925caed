"""How honest a run's ETA is: the progress line's estimate against the time that was actually left.

    python benchmarks/bench_eta.py [--model DIR] [--limit N] [--tasks all] [--name bench_eta]
        [-- RUEVAL ARGS...]

Not part of the test suite. One run:
1. builds the tiny model (``rueval make-tiny-model``) unless ``--model`` names one;
2. runs README's main command shape on the bundled samples as a child process,
   ``rueval run -m hf:DIR -t all --shots 0,1,4,8 --episodes 5 --cache off -o OUT --verbose`` (``--limit`` and
   ``--tasks`` narrow it; arguments after ``--`` replace everything after ``rueval``), its stderr a
   pipe, so progress comes as plain lines every LOG_EVERY seconds
   (``NAME: done/total tokens, rate/s, ETA h:mm:ss``) and a closing ``NAME: done/total tokens in h:mm:ss``;
3. stamps each line with the time it arrived, and for each engine call's counter (the pooled call,
   then e.g. ruTiE's rounds) takes the line nearest each fraction of its tokens and sets its ETA
   against the time actually left until the counter's closing line;
4. reads --verbose's closing line of each engine call (each kind's tokens and time): what a generation
   budget's token took in scored tokens' time, the measure of token_counts.GENERATED_TOKEN_COST;
5. prints the table and writes benchmarks/results/<name>.json. The check: at half the tokens the ETA
   is within 2x of the time left (0.5 <= ETA / left <= 2).

The figures are only as good as the machine is quiet: the run records the 1-minute load average.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_results

RESULTS = Path(__file__).parent / "results"
FRACTIONS = (0.1, 0.25, 0.5, 0.75, 0.9)
NUMBER = r"[\d,]+"
PROGRESS = re.compile(rf"^(?P<name>.+): (?P<done>{NUMBER})/(?P<total>{NUMBER}) tokens, [\d.]+/s, ETA (?P<eta>\S+)$")
SPEEDS = re.compile(  # --verbose's closing line of an engine call: each kind's tokens and time
    rf"^(?P<name>.+): (?P<scored>{NUMBER}) scored tokens in (?P<scoring>[\d.]+) s; generations' "
    rf"(?P<prompts>{NUMBER}) prompt and (?P<budgets>{NUMBER}) budget tokens in (?P<generating>[\d.]+) s$"
)
CLOSING = re.compile(rf"^(?P<name>.+): (?P<done>{NUMBER})/(?P<total>{NUMBER}) tokens in (?P<took>\d+:\d\d:\d\d)$")


def seconds(clock: str) -> float | None:
    """h:mm:ss as seconds; None for "?"."""
    if clock == "?":
        return None
    hours, minutes, secs = (int(part) for part in clock.split(":"))
    return hours * 3600 + minutes * 60 + secs


def counters(stamped: list[tuple[float, str]]) -> list[dict]:
    """Each finished counter: its name, total tokens, duration and (time, done, ETA) lines."""
    found, open_ = [], {}
    for at, line in stamped:
        if match := PROGRESS.match(line):
            name = match["name"]
            points = open_.setdefault(name, {"name": name, "total": int(match["total"].replace(",", "")), "lines": []})
            points["lines"].append((at, int(match["done"].replace(",", "")), seconds(match["eta"])))
        elif (match := CLOSING.match(line)) and match["name"] in open_:
            counter = open_.pop(match["name"])
            counter["end"] = at
            found.append(counter)
    return found


def speeds(stamped: list[tuple[float, str]]) -> list[dict]:
    """Each engine call's speeds, and what a budget token took in scored tokens' time (GENERATED_TOKEN_COST)."""
    found = []
    for _, line in stamped:
        if match := SPEEDS.match(line):
            scored, prompts, budgets = (int(match[name].replace(",", "")) for name in ("scored", "prompts", "budgets"))
            scoring, generating = float(match["scoring"]), float(match["generating"])
            per_second = scored / scoring if scoring else None
            cost = (generating * per_second - prompts) / budgets if per_second and budgets else None
            found.append(
                {
                    "counter": match["name"],
                    "scored_tokens": scored,
                    "scoring_s": scoring,
                    "generation_prompt_tokens": prompts,
                    "generation_budget_tokens": budgets,
                    "generating_s": generating,
                    "budget_token_in_scored_tokens": None if cost is None else round(cost, 1),
                }
            )
    return found


def judged(counter: dict) -> dict:
    """The counter's ETA at the line nearest each fraction of its tokens, against the time left."""
    start = counter["lines"][0][0]
    rows = []
    for fraction in FRACTIONS:
        at, done, eta = min(counter["lines"], key=lambda point: abs(point[1] / counter["total"] - fraction))
        left = counter["end"] - at
        ratio = eta / left if eta is not None and left > 0 else None
        rows.append(
            {
                "fraction": fraction,
                "tokens_done": round(done / counter["total"], 3),
                "elapsed_s": round(at - start, 1),
                "eta_s": eta,
                "left_s": round(left, 1),
                "eta_over_left": None if ratio is None else round(ratio, 2),
            }
        )
    half = rows[FRACTIONS.index(0.5)]["eta_over_left"]
    return {
        "counter": counter["name"],
        "tokens": counter["total"],
        "lines": len(counter["lines"]),
        "seconds": round(counter["end"] - start, 1),
        "at_fraction": rows,
        "half_within_2x": half is not None and 0.5 <= half <= 2,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="a model folder (default: the tiny model, built afresh)")
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--limit", type=int, help="examples per task (a shorter run, for development)")
    parser.add_argument("--name", default="bench_eta")
    parser.add_argument("rueval_args", nargs="*", help="after --: the rueval arguments instead of the default")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-eta-"))
    rueval = [sys.executable, "-m", "rueval"]
    model = args.model
    if model is None and not args.rueval_args:
        model = work / "tiny"
        subprocess.run([*rueval, "make-tiny-model", str(model)], check=True, capture_output=True)
    command = args.rueval_args or [
        "run", "-m", f"hf:{model}", "-t", args.tasks, "--shots", "0,1,4,8", "--episodes", "5",
        "--cache", "off", "-o", str(work / "out"), "--verbose", *(["--limit", str(args.limit)] if args.limit else []),
    ]  # fmt: skip
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    child = subprocess.Popen([*rueval, *command], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    stamped = []
    for line in child.stderr:
        stamped.append((time.monotonic(), line.rstrip("\n")))
        print(line, end="", file=sys.stderr)
    if child.wait() != 0:
        raise SystemExit(f"rueval exited with {child.returncode}")
    wall = time.monotonic() - started
    rows = [judged(counter) for counter in counters(stamped) if len(counter["lines"]) >= 2]
    print(f"\n{'counter':<40} {'tokens':>10} {'s':>7}  ETA / time left at 10%, 25%, 50%, 75%, 90% of the tokens")
    for row in rows:
        ratios = "  ".join(f"{r['eta_over_left']}" for r in row["at_fraction"])
        print(f"{row['counter']:<40.40} {row['tokens']:>10,} {row['seconds']:>7}  {ratios}")
    measured = speeds(stamped)
    for speed in measured:
        print(f"{speed['counter']}: a budget token took {speed['budget_token_in_scored_tokens']} scored tokens' time")
    write_results(
        RESULTS / f"{args.name}.json",
        rows,
        speeds=measured,
        command=" ".join(["rueval", *command]).replace(str(work), "TMP"),
        wall_seconds=round(wall, 1),
        load_average_before=load_before,
        load_average_after=os.getloadavg()[0],
    )


if __name__ == "__main__":
    main()
