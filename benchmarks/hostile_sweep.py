"""Issue 27's cases tried again as a hostile user would: every case the issue names, and close
variants of each (other bad values of the same kind, the other commands that take the same option,
the Python API), each run in a fresh process in a temporary folder and classed by its outcome; the
round3 group does the same for issue 35's findings.

    python benchmarks/hostile_sweep.py [--only WORDS] [--skip-slow] [--keep DIR] [--json FILE]

Not part of the test suite. A case is a command (``rueval ...`` or a Python snippet that calls the
API) with what a right outcome is: a clear error (exit code 2, one ``error:`` line, with the words
the case names: the file, line and field, or the option), a correct result (exit 0, and the case's
check of what was written holds), or either of them where both are right (a cache that cannot be
written may cost speed or stop the run, never a number). The outcome classes:

- clear error / handled: right;
- unclear error: exit 2 and one line, but not the words that say what is wrong (or several lines);
- wrongly refused: exit 2 where a result was due;
- traceback: a Python traceback, or an exit code other than 0 and 2;
- silent wrong: exit 0 where an error was due, or a result (or the files left behind) that is wrong;
- hang: no end within the case's timeout (its process group is killed);
- memory: a peak resident set over the case's bound.

The cases (benchmarks/hostile_cases/, a module per group) use the bundled samples, the tiny model that `rueval
make-tiny-model` builds, and the tests' fault-injection OpenAI-compatible server
(tests/models/fault_server.py) for the numbers no real server answers on demand. A few cases need
root (a small tmpfs for a full disk, an immutable folder): they are skipped without it. Prints a
table of outcomes by class and by the issue's groups, then every case that is not right; writes
benchmarks/results/hostile_sweep.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from hostile_cases import CASES  # noqa: E402 - beside this script
from hostile_cases.harness import ERROR, OK, Case, CaseDir, Outcome, Shared, Skip, run_command  # noqa: E402
from results_file import write_results  # noqa: E402

CLASSES = (
    "clear error",
    "handled",
    "unclear error",
    "wrongly refused",
    "traceback",
    "silent wrong",
    "hang",
    "memory",
    "skipped",
    "setup failed",
)
RIGHT = ("clear error", "handled", "skipped")


def classify(case: Case, outcome: Outcome, problems: list[str], memory_mb: float | None) -> tuple[str, str]:
    """The outcome's class and what it says (the error line, or what is wrong)."""
    if outcome.returncode is None and case.serves:
        if case.expect == ERROR:
            return "silent wrong", f"took the value: still serving after {case.timeout:g} s"
        return "handled", f"serving (stopped after {case.timeout:g} s)"
    if outcome.returncode is None:
        return "hang", f"no end in {case.timeout:g} s"
    if memory_mb is not None and outcome.peak_mb > memory_mb:
        return "memory", f"peak {outcome.peak_mb:.0f} MB, bound {memory_mb:.0f} MB"
    if "Traceback (most recent call last)" in outcome.output or outcome.returncode not in (0, 2):
        lines = [line for line in outcome.output.splitlines() if line.strip()]
        return "traceback", f"exit {outcome.returncode}: {lines[-1] if lines else ''}"[:300]
    if outcome.returncode == 2:
        line = outcome.error_line()
        if case.expect == OK:
            return "wrongly refused", line
        if problems:
            return "silent wrong", "; ".join(problems)
        # progress and notes may come before it (a run that started), one error line ends it
        errors = [ln for ln in outcome.stderr.splitlines() if ln.startswith("error: ")]
        if not line.startswith("error: ") or len(errors) != 1:
            return "unclear error", f"not one error line: {outcome.stderr.strip()[-300:]}"
        missing = [words for words in case.said if words not in line]
        if missing:
            return "unclear error", f"{line} (lacks {missing})"
        return "clear error", line
    if case.expect == ERROR:
        return "silent wrong", "exit 0 where an error was due" + (f"; {'; '.join(problems)}" if problems else "")
    if problems:
        return "silent wrong", "; ".join(problems)
    if memory_mb is not None:
        return "handled", f"peak {outcome.peak_mb:.0f} MB, bound {memory_mb:.0f} MB"
    return "handled", outcome.stdout.strip().splitlines()[-1][:200] if outcome.stdout.strip() else ""


def try_case(case: Case, shared: Shared, root: Path) -> dict:
    folder = root / f"{case.group}-{case.name}".replace("/", "_")[:120]
    folder.mkdir(parents=True)
    where = CaseDir(folder, shared)
    try:
        try:
            argv = case.prepare(where)
        except Skip as e:
            return {"group": case.group, "case": case.name, "class": "skipped", "detail": str(e), "seconds": 0}
        except Exception as e:  # the sweep's own failure, shown apart from the outcomes
            detail = f"{type(e).__name__}: {e}"[-300:]
            return {"group": case.group, "case": case.name, "class": "setup failed", "detail": detail, "seconds": 0}
        outcome = run_command(argv, folder, where.env, case.timeout)
        problems = (
            [] if outcome.returncode is None else [p for check in where.checks if (p := _checked(check, outcome))]
        )
        klass, detail = classify(case, outcome, problems, where.memory_mb or case.memory_mb)
    finally:
        for cleanup in where.cleanups:
            cleanup()
    return {
        "group": case.group,
        "case": case.name,
        "class": klass,
        "detail": detail,
        "seconds": round(outcome.seconds, 2),
        "peak_mb": round(outcome.peak_mb, 1),
    }


def _checked(check: Callable[[Outcome], str | None], outcome: Outcome) -> str | None:
    """A check's finding; one that cannot look (a file the command did not write) says why."""
    try:
        return check(outcome)
    except Exception as e:
        return f"{type(e).__name__}: {e}"[:300]


def table(rows: list[dict]) -> str:
    groups = list(dict.fromkeys(row["group"] for row in rows))
    shown = [k for k in CLASSES if any(row["class"] == k for row in rows)]
    counts = {group: Counter(row["class"] for row in rows if row["group"] == group) for group in groups}
    width = max(len(g) for g in [*groups, "total"]) + 2
    lines = ["".ljust(width) + "".join(k.rjust(max(len(k), 4) + 2) for k in shown) + "   all"]
    for group in [*groups, "total"]:
        count = Counter(row["class"] for row in rows) if group == "total" else counts[group]
        cells = "".join(str(count.get(k, 0)).rjust(max(len(k), 4) + 2) for k in shown)
        lines.append(group.ljust(width) + cells + str(sum(count.values())).rjust(6))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=(), help="cases whose group/name holds one of these words")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the slow cases (large files)")
    parser.add_argument("--keep", type=Path, help="keep the cases' folders here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "hostile_sweep.json")
    parser.add_argument(
        "--merge", type=Path, help="an earlier --json: its cases join this run's table, and those it lacks are run"
    )
    args = parser.parse_args()
    earlier = json.loads(args.merge.read_text(encoding="utf-8"))["results"] if args.merge else []
    tried = {(row["group"], row["case"]) for row in earlier}

    def wanted(case: Case) -> bool:
        if any(word in f"{case.group}/{case.name}" for word in args.only):
            return True
        return (case.group, case.name) not in tried if args.merge else not args.only

    chosen = [case for case in CASES if wanted(case) and not (args.skip_slow and case.slow)]
    root = args.keep or Path(tempfile.mkdtemp(prefix="rueval-hostile-"))
    root.mkdir(parents=True, exist_ok=True)
    shared = Shared(root / "shared")
    shared.root.mkdir(exist_ok=True)
    rows = []
    try:
        for n, case in enumerate(chosen, 1):
            row = try_case(case, shared, root)
            rows.append(row)
            mark = "  " if row["class"] in RIGHT else "!!"
            shown = f"{case.group}/{case.name}: {row['class']} ({row['seconds']} s) {row['detail'][:160]}"
            print(f"{mark} [{n}/{len(chosen)}] {shown}", flush=True)
    finally:
        shared.close()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.merge:  # this run's cases replace their earlier outcomes; the earlier run's other cases are kept
        done = {(row["group"], row["case"]) for row in rows}
        current = {(case.group, case.name) for case in CASES}
        kept = [row for row in earlier if (row["group"], row["case"]) in current - done]
        order = {key: n for n, key in enumerate((case.group, case.name) for case in CASES)}
        rows = sorted(kept + rows, key=lambda row: order[row["group"], row["case"]])
    print()
    print(table(rows))
    wrong = [row for row in rows if row["class"] not in RIGHT]
    if wrong:
        print("\nnot right:")
        for row in wrong:
            print(f"  {row['group']}/{row['case']}: {row['class']}: {row['detail']}")
    write_results(args.json, rows, cases=len(rows), only=list(args.only), skip_slow=args.skip_slow)


if __name__ == "__main__":
    main()
