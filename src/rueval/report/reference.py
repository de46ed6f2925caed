"""The papers' reference rows (human, baselines, models) as data, mapped onto rueval's names.

Each row is transcribed cell by cell as the paper prints it, in the paper's order of metrics
("F1/Acc"), and parsed onto the task's metric names, on rueval's scale (x100): RSG's two papers
print fractions, TAPE prints percentages. Formatting marks (bold, underline) are dropped.

Sources:
- RSG: Shavrina et al. (2020), RussianSuperGLUE, Table 2 (human and baseline results).
- HEURISTICS: Iazykova et al. (2021), Unreasonable Effectiveness of Rule-Based Heuristics in
  Solving Russian SuperGLUE Tasks, Table 8 (scores on the leaderboard at the time of submission).
- TAPE: Taktasheva et al. (2022), TAPE, Table 3 (results on the original test sets; ruGPT-3 rows
  are the mean ± std over five episodes per k).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import fmean

from rueval.core.named import named
from rueval.results import LM_EVAL
from rueval.tasks import BENCHMARKS, TASKS, Benchmark, Total
from rueval.tasks import RSG as RSG_BENCHMARK
from rueval.tasks import TAPE as TAPE_BENCHMARK

RSG = "Shavrina et al. (2020), Table 2"
HEURISTICS = "Iazykova et al. (2021), Table 8"
TAPE = "Taktasheva et al. (2022), Table 3"

CITATIONS = {
    RSG: "Shavrina, T., Fenogenova, A., Emelyanov, A., et al. (2020). RussianSuperGLUE: A Russian Language "
    "Understanding Evaluation Benchmark. EMNLP 2020. Table 2: results of the human benchmark and the baseline models.",
    HEURISTICS: "Iazykova, T., Bystrova, O., et al. (2021). Unreasonable Effectiveness of Rule-Based Heuristics in "
    "Solving Russian SuperGLUE Tasks. Dialogue 2021. Table 8: performance scores at the time of submission.",
    TAPE: "Taktasheva, E., Shavrina, T., Fenogenova, A., et al. (2022). TAPE: Assessing Few-shot Russian Language "
    "Understanding. Findings of EMNLP 2022. Table 3: results on the original test sets, F1 / accuracy (EM).",
}

# A cell with one number where the task has two metrics (RSG Table 2, TF-IDF on RCB) is kept as
# one task-level value under this key rather than guessed onto either metric.
TASK_LEVEL = "score"


@dataclass(frozen=True)
class ScoreRow:
    """One row of scores: a paper's reference row or a rueval run, in rueval's names and scale (x100).

    ``metrics`` maps task -> metric -> value; ``std`` the same for few-shot rows (mean ± std over
    episodes). ``printed_total`` is the paper's own average column, kept to check the transcription.
    """

    name: str
    benchmark: str  # its benchmark's name
    source: str  # a citation key of CITATIONS, or a run directory
    metrics: Mapping[str, Mapping[str, float]]
    std: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    k: int | None = None  # few-shot demonstrations, for LM rows
    kind: str = "baseline"  # human | baseline | model (the leaderboard's best) | run | partial (a --limit run)
    counterpart: str | None = None  # the rueval model that computes the same baseline
    printed_total: tuple[float, ...] = ()
    note: str = ""  # a paper row's transcription note; why a run is not comparable with the papers' rows
    total_rule: Total | None = None  # a board's own total, where the benchmark has none (task files')

    @property
    def is_reference(self) -> bool:
        return self.kind not in ("run", "partial")

    @property
    def comparable(self) -> bool:
        """A partial run scored part of each split, and a run with a note other data than the official
        files: they are shown, never ranked among the papers' rows."""
        return self.is_reference or (self.kind == "run" and not self.note)

    @property
    def ranked(self) -> bool:
        return self.comparable and bool(self.reported_total())

    def task_score(self, task: str) -> float | None:
        """The task score: the mean of its metrics, as RSG defines it; None when not reported."""
        values = self.metrics.get(task)
        return fmean(values.values()) if values else None

    def total(self) -> tuple[float, ...] | None:
        """The benchmark's total (rueval.tasks.Total): RSG's mean of the nine task scores, TAPE's mean
        F1 and mean accuracy/EM over the seven tasks. None unless every task of the total is reported."""
        rule = self.total_rule or BENCHMARKS[self.benchmark].total
        return None if rule is None else rule.of({task: self._in_order(task) for task in self.metrics})

    def _in_order(self, task: str) -> list[float]:
        """The task's values in its metric order; a task-level value alone where the paper printed one."""
        values = self.metrics[task]
        return [values[m] for m in metric_order(self.benchmark, task, values) if m in values] or list(values.values())

    def reported_total(self) -> tuple[float, ...] | None:
        """The total a table shows: the paper's own for reference rows, computed for runs."""
        return self.printed_total or self.total()


def metric_order(benchmark: str, task: str, values: Mapping[str, float]) -> tuple[str, ...]:
    """A task's metrics in a row's order: a task file's as its run named them (its score first), rueval's own
    task's as the task declares them."""
    return tuple(values) if benchmark == LM_EVAL else TASKS[task].metrics


def _parse_cell(task: str, cell: str, scale: float) -> tuple[dict[str, float], dict[str, float]]:
    """'0.432/0.468' or '36.7 ±0.0 / 58.0 ±0.0' -> ({metric: value x100}, {metric: std x100})."""
    parts = [p.split("±") for p in cell.split("/")]
    names = TASKS[task].metrics if len(parts) == len(TASKS[task].metrics) else (TASK_LEVEL,)
    if len(parts) != len(names):
        raise ValueError(f"{task}: cell {cell!r} does not match metrics {TASKS[task].metrics}")
    values = {name: round(float(p[0]) * scale, 6) for name, p in zip(names, parts, strict=True)}
    stds = {name: round(float(p[1]) * scale, 6) for name, p in zip(names, parts, strict=True) if len(p) == 2}
    return values, stds


def _row(
    name: str,
    benchmark: str,
    source: str,
    cells: Mapping[str, str],
    total: str,
    counterpart: str | None = None,
    k: int | None = None,
) -> ScoreRow:
    """A reference row from the paper's printed cells and total."""
    scale = 1.0 if source == TAPE else 100.0
    parsed = {task: _parse_cell(task, cell, scale) for task, cell in cells.items()}
    return ScoreRow(
        name=name,
        benchmark=benchmark,
        source=source,
        metrics={task: values for task, (values, _) in parsed.items()},
        std={task: stds for task, (_, stds) in parsed.items() if stds},
        printed_total=tuple(round(float(v) * scale, 6) for v in re.split(r"\s*/\s*", total) if v),
        k=k,
        kind=_kind(name),
        counterpart=counterpart,
        note=_NOTES.get((source, name), ""),
    )


# Each benchmark declares its tasks in its paper's column order.
RSG_TASK_ORDER = tuple(task.name for task in RSG_BENCHMARK.tasks)
TAPE_TASK_ORDER = tuple(task.name for task in TAPE_BENCHMARK.tasks)


def _rsg_cells(*cells: str) -> dict[str, str]:
    return dict(zip(RSG_TASK_ORDER, cells, strict=True))


def _tape_cells(*cells: str) -> dict[str, str]:
    """TAPE Table 3 cells in its column order; '✗' (not evaluated) cells are left out."""
    return {task: cell for task, cell in zip(TAPE_TASK_ORDER, cells, strict=True) if cell != "✗"}


# Columns of RSG Table 2: RuBERT, MultiBERT, TF-IDF, Human; rows in RSG_TASK_ORDER.
_RSG_TABLE_2 = {
    "Human": _rsg_cells("0.626", "0.68/0.702", "0.982", "0.806/0.42", "0.92", "0.747", "0.84", "0.879", "0.93/0.924"),
    "RuBERT": _rsg_cells(
        "0.186", "0.432/0.468", "0.61", "0.656/0.256", "0.639", "0.894", "0.675", "0.749", "0.255/0.251"
    ),
    "MultiBERT": _rsg_cells(
        "0.157", "0.383/0.429", "0.588", "0.626/0.253", "0.62", "0.84", "0.675", "0.79", "0.371/0.367"
    ),
    "TF-IDF": _rsg_cells("0.059", "0.45", "0.48", "0.589/0.244", "0.47", "0.66", "0.66", "0.68", "0.256/0.251"),
}
_RSG_TABLE_2_AVERAGE = {"Human": "0.802", "RuBERT": "0.546", "MultiBERT": "0.542", "TF-IDF": "0.461"}

# Columns of the heuristics paper's Table 8 (rows in RSG_TASK_ORDER, two-metric tasks on two lines).
_HEURISTICS_TABLE_8 = {
    "Human": _rsg_cells(
        "0.626", "0.680/0.702", "0.982", "0.806/0.420", "0.920", "0.805", "0.840", "0.915", "0.930/0.890"
    ),
    "SOTA (May 2021)": _rsg_cells(
        "0.231", "0.452/0.546", "0.908", "0.941/0.819", "0.871", "0.729", "0.669", "0.917", "0.920/0.924"
    ),
    "Majority": _rsg_cells(
        "0.000", "0.217/0.484", "0.498", "0.000/0.000", "0.513", "0.587", "0.669", "0.503", "0.250/0.247"
    ),
    "Random": _rsg_cells(
        "0.024", "0.332/0.347", "0.474", "0.477/0.078", "0.503", "0.501", "0.487", "0.494", "0.250/0.247"
    ),
    "Random balanced": _rsg_cells(
        "0.000", "0.319/0.374", "0.480", "0.450/0.071", "0.483", "0.528", "0.597", "0.520", "0.250/0.247"
    ),
    "Heuristics + majority": _rsg_cells(
        "0.147", "0.400/0.438", "0.478", "0.671/0.237", "0.549", "0.595", "0.669", "0.642", "0.260/0.257"
    ),
    "Heuristics + random": _rsg_cells(
        "0.149", "0.401/0.436", "0.508", "0.669/0.195", "0.547", "0.497", "0.565", "0.629", "0.260/0.257"
    ),
    "Heuristics + random balanced": _rsg_cells(
        "0.182", "0.401/0.438", "0.470", "0.669/0.202", "0.548", "0.543", "0.604", "0.629", "0.260/0.257"
    ),
}
_HEURISTICS_TABLE_8_TOTAL = {
    "Human": "0.811",
    "SOTA (May 2021)": "0.679",
    "Majority": "0.374",
    "Random": "0.372",
    "Random balanced": "0.385",
    "Heuristics + majority": "0.468",
    "Heuristics + random": "0.445",
    "Heuristics + random balanced": "0.454",
}
_HEURISTICS_COUNTERPART = {"Majority": "majority", "Random": "random", "Random balanced": "weighted-random"}

_TAPE_AVG_NOTE = "TAPE's Avg column for the ruGPT-3 rows differs from the mean of the printed cells by up to 0.4."

# TAPE Table 3: (row name, k, the seven cells in TAPE_TASK_ORDER, the Avg cell "F1 / Acc").
_TAPE_TABLE_3: tuple[tuple[str, int | None, tuple[str, ...], str], ...] = (
    ("ruGPT-3 Small", 0, ("38.6 / 57.9", "34.1 / 34.0", "33.9 / 34.0", "0.17 / 0.0", "1.0 / 0.0",
                          "34.1 / 55.5", "48.5 / 60.9"), "27.24 / 34.64"),
    ("ruGPT-3 Small", 1, ("36.7 ±0.0 / 58.0 ±0.0", "33.5 ±0.4 / 33.5 ±0.4", "34.9 ±0.8 / 35.0 ±0.8",
                          "0.13 ±0.04 / 0.0 ±0.0", "0.52 ±0.14 / 0.0 ±0.0", "14.3 ±11.1 / 59.9 ±5.8",
                          "49.6 ±7.1 / 60.8 ±5.7"), "24.24 / 35.33"),
    ("ruGPT-3 Small", 4, ("41.0 ±5.3 / 54.8 ±3.9", "34.3 ±0.9 / 34.3 ±0.9", "34.6 ±0.6 / 34.6 ±0.6",
                          "0.09 ±0.06 / 0.0 ±0.0", "0.62 ±0.34 / 0.65 ±0.29", "23.5 ±13.8 / 54.3 ±12.3",
                          "56.7 ±10.8 / 61.3 ±5.0"), "27.44 / 34.31"),
    ("ruGPT-3 Small", 8, ("36.9 ±0.4 / 54.8 ±6.5", "35.1 ±0.9 / 35.1 ±0.8", "33.6 ±0.5 / 33.7 ±0.5",
                          "0.12 ±0.22 / 0.0 ±0.0", "0.35 ±0.26 / 0.35 ±0.26", "32.4 ±6.9 / 50.4 ±4.0",
                          "63.7 ±9.5 / 61.7 ±4.2"), "29.04 / 33.56"),
    ("ruGPT-3 Medium", 0, ("39.5 / 57.2", "38.0 / 38.0", "34.8 / 34.8", "0.18 / 0.0", "0.75 / 0.0",
                           "2.4 / 68.3", "5.3 / 44.1"), "17.29 / 34.71"),
    ("ruGPT-3 Medium", 1, ("36.7 ±0.0 / 58.0 ±0.0", "36.3 ±0.6 / 36.3 ±0.6", "36.7 ±0.8 / 36.8 ±0.8",
                           "0.11 ±0.03 / 0.0 ±0.0", "0.47 ±0.11 / 0.0 ±0.0", "14.3 ±11.1 / 59.9 ±5.8",
                           "49.6 ±7.1 / 60.8 ±5.7"), "24.9 / 35.99"),
    ("ruGPT-3 Medium", 4, ("39.7 ±4.1 / 57.9 ±0.6", "38.9 ±1.0 / 38.8 ±1.0", "36.3 ±1.3 / 36.4 ±1.3",
                           "0.12 ±0.18 / 0.0 ±0.0", "0.85 ±0.52 / 0.92 ±0.53", "14.9 ±16.0 / 58.6 ±13.1",
                           "45.5 ±13.7 / 59.0 ±7.3"), "25.57 / 35.74"),
    ("ruGPT-3 Medium", 8, ("39.0 ±5.9 / 54.3 ±6.5", "40.1 ±0.5 / 40.1 ±0.5", "35.7 ±0.9 / 35.8 ±1.0",
                           "0.1 ±0.15 / 0.0 ±0.0", "0.42 ±0.19 / 0.42 ±0.19", "19.6 ±10.6 / 60.1 ±5.1",
                           "57.7 ±9.0 / 64.2 ±2.1"), "27.78 / 36.83"),
    ("ruGPT-3 Large", 0, ("39.2 / 55.5", "40.8 / 40.7", "39.6 / 39.6", "0.14 / 0.0", "0.57 / 0.0",
                          "0.3 / 68.6", "8.0 / 44.9"), "18.15 / 35.73"),
    ("ruGPT-3 Large", 1, ("36.7 ±0.0 / 58.0 ±0.0", "38.2 ±0.8 / 38.2 ±0.8", "39.8 ±1.0 / 39.8 ±1.1",
                          "0.12 ±0.4 / 0.0 ±0.0", "0.47 ±0.11 / 0.0 ±0.0", "14.3 ±11.1 / 59.9 ±5.8",
                          "49.6 ±7.1 / 60.8 ±5.7"), "25.6 / 36.69"),
    ("ruGPT-3 Large", 4, ("38.8 ±2.9 / 58.4 ±0.5", "40.9 ±0.8 / 40.8 ±0.8", "39.6 ±0.8 / 39.6 ±0.8",
                          "0.1 ±0.14 / 0.0 ±0.0", "0.54 ±0.44 / 0.54 ±0.4", "11.8 ±12.4 / 60.4 ±11.1",
                          "44.5 ±15.9 / 59.6 ±8.1"), "25.1 / 36.96"),
    ("ruGPT-3 Large", 8, ("39.2 ±3.2 / 57.6 ±1.5", "41.9 ±0.7 / 41.9 ±0.7", "38.8 ±1.5 / 38.9 ±1.5",
                          "0.0 ±0.0 / 0.0 ±0.0", "0.54 ±0.4 / 0.54 ±0.4", "23.3 ±8.3 / 58.1 ±3.4",
                          "52.0 ±8.5 / 63.7 ±2.4"), "28.33 / 37.12"),
    ("Random", None, ("51.7 / 51.3", "26.0 / 26.1", "21.4 / 21.6", "✗", "✗", "36.5 / 47.9", "54.1 / 52.0"), ""),
    ("Linear", None, ("36.7 / 58.0", "14.3 / 25.8", "11.4 / 25.2", "✗", "✗", "0.0 / 68.6", "49.0 / 65.3"), ""),
    ("Human", None, ("86.6 / 87.0", "83.8 / 83.7", "87.5 / 86.5", "92.8 / 91.0", "71.9 / 64.5", "51.0 / 52.9",
                     "73.0 / 67.6"), "78.09 / 76.17"),
)  # fmt: skip


_NOTES = {
    (RSG, "TF-IDF"): "RCB: the paper prints one value, 0.45, under F1/Acc.; kept as the task score.",
    (HEURISTICS, "SOTA (May 2021)"): "Each task cell is that task's best leaderboard score; the total, 67.9, is "
    "the best single system's (an ensemble), so it is not the mean of the cells.",
    (TAPE, "ruGPT-3 Small"): _TAPE_AVG_NOTE,
    (TAPE, "ruGPT-3 Medium"): _TAPE_AVG_NOTE,
    (TAPE, "ruGPT-3 Large"): _TAPE_AVG_NOTE,
}


def _kind(name: str) -> str:
    """The papers call every non-human row a baseline, except the leaderboard's best (SOTA)."""
    if name == "Human":
        return "human"
    return "model" if name.startswith("SOTA") else "baseline"


# The papers' rows of each benchmark, named by its declaration (Benchmark.references).
RSG_ROWS: tuple[ScoreRow, ...] = (
    *(_row(name, RSG_BENCHMARK.name, RSG, cells, _RSG_TABLE_2_AVERAGE[name]) for name, cells in _RSG_TABLE_2.items()),
    *(
        _row(
            name,
            RSG_BENCHMARK.name,
            HEURISTICS,
            cells,
            _HEURISTICS_TABLE_8_TOTAL[name],
            _HEURISTICS_COUNTERPART.get(name),
        )
        for name, cells in _HEURISTICS_TABLE_8.items()
    ),
)
TAPE_ROWS: tuple[ScoreRow, ...] = tuple(
    _row(name, TAPE_BENCHMARK.name, TAPE, _tape_cells(*cells), total, k=k) for name, k, cells, total in _TAPE_TABLE_3
)


def references(benchmark: Benchmark, source: str | None = None) -> list[ScoreRow]:
    """The papers' rows of a benchmark (none for one without), optionally of one source only."""
    rows = named(benchmark.references, f"{benchmark.name}'s papers' rows") if benchmark.references else ()
    return [r for r in rows if source is None or r.source == source]


def reference(benchmark: Benchmark, source: str, name: str, k: int | None = None) -> ScoreRow:
    """One reference row by its source and name (and k for TAPE's ruGPT-3 rows)."""
    for row in references(benchmark, source):
        if row.name == name and row.k == k:
            return row
    raise KeyError((benchmark.name, source, name, k))
