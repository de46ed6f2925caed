"""Leaderboard tables: runs ranked among the papers' human and baseline rows.

RSG-style follows the RussianSuperGLUE leaderboard (a total, then every task's metrics);
TAPE-style follows TAPE's Table 3 (k-shot, "F1 / accuracy (EM)" per task, the two averages).
The same tables appear in the HTML report; here they are written as Markdown and CSV.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rueval.core.files import write_text
from rueval.report.reference import CITATIONS, TASK_LEVEL, ScoreRow, metric_order, references
from rueval.report.runs import Run, load_runs
from rueval.report.ties import Ties, ties_with_leader
from rueval.results import LM_EVAL
from rueval.scoring.decisions import ALPHA
from rueval.scoring.metrics import metric
from rueval.tasks import BENCHMARKS, TASKS, Benchmark, Total, tasks_of

# task-file runs ranked among themselves, by the mean score (each task's first metric) over the tasks all scored
TASK_FILES = Benchmark(LM_EVAL, title="lm-eval task files")


@dataclass(frozen=True)
class Board:
    """A ranked table: the score rows in order, and how to print them."""

    benchmark: Benchmark
    rows: list[ScoreRow]
    tasks: tuple[str, ...]
    rule: Total | None = None  # the board's own total (task files'); else the benchmark's
    ties: Ties = Ties()  # the runs tied with the best-ranked run

    @property
    def title(self) -> str:
        return f"{self.benchmark.title} leaderboard"

    @property
    def total(self) -> Total | None:
        return self.rule or self.benchmark.total

    @property
    def totals(self) -> tuple[str, ...]:
        """The total's columns in the CSV."""
        return self.total.columns if self.total else ()

    def metrics_of(self, task: str) -> tuple[str, ...]:
        """The task's metrics in its column; a task file's as the first run with the task named them."""
        if self.benchmark is not TASK_FILES:
            return TASKS[task].metrics
        return metric_order(LM_EVAL, task, next(row.metrics[task] for row in self.rows if task in row.metrics))

    @property
    def ties_note(self) -> str:
        """What the ≈ mark means, or why no run has it; "" when there is no run to compare."""
        if self.ties.adjusted:
            return (
                f"≈: tied with the best-ranked run: not distinguishable from it by the paired bootstrap of the "
                f"total on the same examples, Holm-corrected over the runs compared with it (p >= {ALPHA}); "
                "zero-shot runs with their predictions."
            )
        return f"No ties with the best-ranked run computed: {self.ties.missing}" if self.ties.missing else ""

    @property
    def show_k(self) -> bool:
        return any(row.k is not None for row in self.rows)

    def header(self) -> list[str]:
        total = [self.total.title] if self.total else []
        columns = ["#", "Name", *(["k"] if self.show_k else []), *total]
        return [*columns, *map(self._column, self.tasks), "Source"]

    def _column(self, task: str) -> str:
        if self.benchmark is TASK_FILES:
            return f"{task} ({'/'.join(self.metrics_of(task))})"
        return f"{TASKS[task].title} ({'/'.join(metric(m).title for m in self.metrics_of(task))})"

    def cells(self, rank: int | None, row: ScoreRow) -> list[str]:
        """One row as printed text: rank (runs and papers alike), name, k, total, task cells, source."""
        total = row.reported_total()
        tied = " ≈" if self.ties.mark(row.source) == "tied" and not row.is_reference else ""
        cells = [str(rank) if rank else "", row.name + tied, *([_k(row.k)] if self.show_k else [])]
        if self.total:
            cells.append(" / ".join(map(format_score, total)) if total else "–")
        cells += [task_cell(row, t, self.metrics_of(t)) for t in self.tasks]
        return [*cells, row.source]

    def ranked(self) -> list[tuple[int | None, ScoreRow]]:
        """Rows with a total ranked by it (TAPE: by average F1); rows without one, partial runs and runs
        not comparable with the papers' rows last, unranked."""
        totals = [(r, total[0]) for r in self.rows if r.ranked and (total := r.reported_total())]
        ordered = [r for r, _ in sorted(totals, key=lambda pair: -pair[1])]
        return [(i + 1, r) for i, r in enumerate(ordered)] + [(None, r) for r in self.rows if not r.ranked]

    def markdown(self) -> str:
        lines = [self._md_line(map(markdown_text, self.header())), self._md_line(["---"] * len(self.header()))]
        for rank, row in self.ranked():
            cells = [markdown_text(cell) for cell in self.cells(rank, row)]
            if not row.is_reference:
                cells[1] = f"**{cells[1]}**"  # runs stand out among the papers' rows
            lines.append(self._md_line(cells))
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """Numbers unformatted: one column per task metric (and its std for few-shot rows)."""
        keys = [
            (t, m)
            for t in self.tasks
            for m in (*self.metrics_of(t), TASK_LEVEL)
            if any(m in r.metrics.get(t, {}) for r in self.rows)
        ]
        std_keys = [(t, m) for t, m in keys if any(m in r.std.get(t, {}) for r in self.rows)]
        totals = self.totals
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(
            [
                "rank",
                "name",
                "k",
                "kind",
                *totals,
                *(f"{t}:{m}" for t, m in keys),
                *(f"{t}:{m}:std" for t, m in std_keys),
                "source",
                "vs_leader",
            ]
        )
        for rank, row in self.ranked():
            total = row.reported_total() or (None,) * len(totals)
            writer.writerow(
                [
                    rank,
                    row.name,
                    row.k,
                    row.kind,
                    *map(_number, total),
                    *(_number(row.metrics.get(t, {}).get(m)) for t, m in keys),
                    *(_number(row.std.get(t, {}).get(m)) for t, m in std_keys),
                    row.source,
                    "" if row.is_reference else self.ties.mark(row.source),
                ]
            )
        return buffer.getvalue()

    @staticmethod
    def _md_line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(cells) + " |"


MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|])")


def markdown_text(text: str) -> str:
    """Text as a Markdown table cell shows it (a run's folder name is the user's): HTML's special
    characters as entities, Markdown's punctuation and the cell separator escaped, one line."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(text, quote=False)).replace("\n", " ")


def boards(runs: Sequence[Run]) -> list[Board]:
    """One board per benchmark with papers' rows that any run has tasks of: the runs' rows among the
    papers'. Tasks of a benchmark without any (a task file's, MERA's) are ranked against none."""
    result = []
    for benchmark in BENCHMARKS.values():
        papers = references(benchmark)
        rows = [row for run in runs for row in run.score_rows(benchmark)] if papers else []
        if rows:
            order = tuple(t.name for t in tasks_of(benchmark))  # the papers' column order, then tasks added
            board = Board(benchmark, [*rows, *papers], order)
            if board.total:
                board = replace(
                    board, ties=ties_with_leader([row for rank, row in board.ranked() if rank], board.total)
                )
            result.append(board)
    return result + task_file_boards(runs)


def task_file_boards(runs: Sequence[Run]) -> list[Board]:
    """The task-file runs ranked among themselves: by their mean score over the tasks (not groups) every one
    of them scored; a run of part of each split (--limit) unranked."""
    rows = [row for run in runs for row in run.score_rows(TASK_FILES)]
    if not rows:
        return []
    groups = {name for run in runs for name, result in run.tasks.items() if result.subtasks}
    tasks = tuple(dict.fromkeys(task for row in rows for task in row.metrics))
    shared = tuple(t for t in tasks if t not in groups and all(t in row.metrics for row in rows))
    rule = Total(shared, title=f"Mean score ({len(shared)} tasks)", per_metric=("mean score",)) if shared else None
    return [Board(TASK_FILES, [replace(row, total_rule=rule) for row in rows], tasks, rule)]


def task_cell(row: ScoreRow, task: str, metrics: Sequence[str]) -> str:
    """'43.2 / 46.8' in the task's metric order, '36.7 ±0.0 / 58.0 ±0.0' with stds, '–' when absent."""
    values = row.metrics.get(task)
    if not values:
        return "–"
    std = row.std.get(task, {})
    names = [m for m in (*metrics, TASK_LEVEL) if m in values]
    return " / ".join(format_score(values[m]) + (f" ±{format_score(std[m])}" if m in std else "") for m in names)


def format_score(value: float | None) -> str:
    """One decimal, as both papers print percentages; up to two below 1 (TAPE's 0.17 and ±0.4 on MultiQ);
    "–" for none."""
    if value is None:
        return "–"
    if 0.005 <= abs(value) < 1:
        return f"{value:.2f}".rstrip("0")
    return f"{value:.1f}"


def _k(k: int | None) -> str:
    return "" if k is None else str(k)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def write_leaderboard(run_dirs: Sequence[Path], out: Path) -> list[tuple[Board, Path, Path]]:
    """Write OUT/leaderboard_<benchmark>.md and .csv for every benchmark the runs cover."""
    written = []
    for board in boards(load_runs(run_dirs)):
        name = board.benchmark.name
        md, csv_path = out / f"leaderboard_{name}.md", out / f"leaderboard_{name}.csv"
        write_text(md, f"# {board.title}\n\n{board.markdown()}\n{citations(board)}")
        write_text(csv_path, board.csv())
        written.append((board, md, csv_path))
    return written


def citations(board: Board) -> str:
    """The sources of the board's paper rows, and their notes, as Markdown."""
    sources = dict.fromkeys(row.source for row in board.rows if row.is_reference)
    lines = [f"- **{source}**: {CITATIONS[source]}" for source in sources]
    notes = dict.fromkeys(
        f"{row.name} ({row.source}): {row.note}" for row in board.rows if row.note and row.is_reference
    )
    lines += [f"- Note, {note}" for note in notes]
    # a run's label is the user's text: shown as text
    unranked = (markdown_text(f"{row.name}: {row.note}") for row in board.rows if row.note and not row.is_reference)
    lines += [f"- {line}" for line in dict.fromkeys(unranked)]
    if board.ties_note:
        lines.append(f"- {markdown_text(board.ties_note)}")
    lines.append(
        "- Paper rows are the papers' scores on the official test sets; runs are scored on their own data. "
        "A run of part of each split (partial), or of other data than the official files (not comparable), "
        "is shown unranked."
    )
    return "\n".join(lines) + "\n"
