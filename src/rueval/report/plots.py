"""The report's figures, drawn with matplotlib's Agg canvas (no display, no global pyplot state).

Each function takes the runs and returns finished PNGs (``Plot``) for the sections that have data,
and nothing for sections no run carries. A run keeps one colour across every figure.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rueval.report.reference import HEURISTICS, RSG, TAPE, ScoreRow, reference, references
from rueval.report.runs import Run
from rueval.results import TaskResult
from rueval.tasks import TAPE as TAPE_BENCHMARK
from rueval.tasks import TASKS, Benchmark, tasks_of

# Reference rows drawn beside the runs' task scores: the human level and a few baselines per benchmark.
SCORE_REFERENCES: tuple[tuple[str, str, int | None], ...] = (
    (RSG, "Human", None),
    (RSG, "RuBERT", None),
    (RSG, "TF-IDF", None),
    (HEURISTICS, "Majority", None),
    (HEURISTICS, "Random balanced", None),
    (TAPE, "Human", None),
    (TAPE, "ruGPT-3 Large", 0),
    (TAPE, "Random", None),
    (TAPE, "Linear", None),
)
REFERENCE_MARKERS = ("*", "D", "s", "^", "v")
FEWSHOT_REFERENCE = "ruGPT-3 Large"  # TAPE's few-shot curve drawn under the runs' curves
METRIC_STYLES = ("-", "--", ":")
INDUSTRIAL_PANELS = (
    ("examples_per_s", "throughput, examples/s"),
    ("latency_ms_per_example", "latency, ms per example"),
    ("peak_rss_mb", "peak memory (RSS), MB"),
    ("model_size_mb", "model size, MB"),
)


@dataclass(frozen=True)
class Plot:
    """A finished figure: a file name stem, a title and a caption for the page, and the PNG bytes."""

    name: str
    title: str
    caption: str
    png: bytes


def run_colors(runs: Sequence[Run]) -> dict[str, Any]:
    """One colour per run label, the same in every figure."""
    palette = matplotlib.color_sequences["tab10"]
    return {run.label: palette[i % len(palette)] for i, run in enumerate(runs)}


def score_plot(runs: Sequence[Run], benchmark: Benchmark) -> Plot | None:
    """Each run's task scores as bars, with the papers' human and baseline scores as markers."""
    tasks = [t.name for t in tasks_of(benchmark) if any(t.name in run.tasks for run in runs)]
    if not tasks:
        return None
    colors = run_colors(runs)
    papers = {(row.source, row.name, row.k): row for row in references(benchmark)}
    refs = [papers[key] for key in SCORE_REFERENCES if key in papers]
    with _figure(len(tasks) * (0.16 * len(runs) + 0.3) + 1.0) as fig:
        ax = fig.add_subplot()
        _bars(
            ax,
            runs,
            colors,
            tasks,
            lambda run, t: run.tasks[t].score if t in run.tasks else None,
            interval=lambda run, t: _score_interval(run.tasks[t]),
            horizontal=True,
        )
        for ref, marker in zip(refs, REFERENCE_MARKERS, strict=False):
            points = [(ref.task_score(t), y) for y, t in enumerate(tasks) if ref.task_score(t) is not None]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.scatter(
                    xs,
                    ys,
                    marker=marker,
                    s=60,
                    color="black",
                    facecolor="white",
                    zorder=3,
                    label=_reference_label(ref),
                )
        ax.set_xlabel("task score (mean of the task's metrics, x100)")
        ax.set_xlim(min(0, *_all_scores(runs, tasks)) - 2, 102)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
        title = f"{benchmark.name.upper()}: task scores beside the papers' numbers"
        return _plot(
            fig,
            f"scores-{benchmark.name}",
            title,
            "Bars: runs (whiskers: confidence interval when the run has "
            "one). Markers: papers' reference rows on their own test sets, not on this data.",
        )


def fewshot_plot(runs: Sequence[Run]) -> Plot | None:
    """Each metric over k (mean over episodes, band ± one std), with TAPE's ruGPT-3 Large curve in grey."""
    tasks = [t for t in TASKS if any(t in run.tasks and run.tasks[t].shots for run in runs)]
    if not tasks:
        return None
    colors = run_colors(runs)
    cols = min(3, len(tasks))
    rows = math.ceil(len(tasks) / cols)
    with _figure(3.0 * rows + 0.6) as fig:
        for i, task in enumerate(tasks):
            ax = fig.add_subplot(rows, cols, i + 1)
            for metric, style in zip(TASKS[task].metrics, METRIC_STYLES, strict=False):
                _reference_curve(ax, task, metric, style)
                for run in runs:
                    shots = run.tasks[task].shots if task in run.tasks else {}
                    ks = sorted(shots, key=int)
                    if not ks:
                        continue
                    mean = [shots[k].metrics.get(metric, math.nan) for k in ks]
                    std = [shots[k].std.get(metric, 0.0) for k in ks]
                    x = [int(k) for k in ks]
                    color = colors[run.label]
                    ax.plot(x, mean, style, marker="o", color=color, label=f"{run.label}: {metric}")
                    ax.fill_between(
                        x,
                        [m - s for m, s in zip(mean, std, strict=True)],
                        [m + s for m, s in zip(mean, std, strict=True)],
                        color=color,
                        alpha=0.15,
                    )
            ax.set_title(task, fontsize=10)
            ax.set_xlabel("k (demonstrations)")
            ax.set_ylabel("x100")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, frameon=False)
        return _plot(
            fig,
            "fewshot",
            "Few-shot curves over k",
            f"Mean over episodes; band: ± one standard deviation. Grey: {FEWSHOT_REFERENCE} "
            f"({TAPE}), on TAPE's own test sets.",
        )


def attack_plot(runs: Sequence[Run]) -> Plot | None:
    """Attack success rate per perturbation, one panel per task, one bar per run."""
    tasks = [t for t in TASKS if any(t in run.tasks and run.tasks[t].perturbations for run in runs)]
    if not tasks:
        return None
    colors = run_colors(runs)
    with _figure(2.6 * len(tasks) + 0.6) as fig:
        for i, task in enumerate(tasks):
            ax = fig.add_subplot(len(tasks), 1, i + 1)
            names = list(dict.fromkeys(p for run in runs for p in _section(run, task, "perturbations")))
            _bars(
                ax,
                runs,
                colors,
                names,
                lambda run, name, task=task: _section(run, task, "perturbations").get(name, {}).get("asr"),  # type: ignore[misc]  # mypy infers no lambda with defaults
            )
            ax.set_title(task, fontsize=10)
            ax.set_ylabel("attack success rate, %")
            ax.set_ylim(0, 100)
        _legend(fig)
        return _plot(
            fig,
            "attacks",
            "Robustness: attack success rate per perturbation",
            "Share of originally correct predictions that the perturbation makes wrong (TAPE, Section 5.4).",
        )


def slice_plots(runs: Sequence[Run]) -> list[Plot]:
    """Per task, the task score on each bucket of each slice, one bar per run; n under each bucket."""
    colors = run_colors(runs)
    plots = []
    for task in TASKS:
        slices = list(dict.fromkeys(s for run in runs for s in _section(run, task, "slices")))
        if not slices:
            continue
        cols = min(2, len(slices))
        rows = math.ceil(len(slices) / cols)
        with _figure(3.0 * rows + 0.6) as fig:
            for i, name in enumerate(slices):
                ax = fig.add_subplot(rows, cols, i + 1)
                per_run = {run.label: _section(run, task, "slices").get(name, {}) for run in runs}
                sizes: dict[str, int | None] = {}
                for buckets in per_run.values():
                    for bucket, values in buckets.items():
                        sizes.setdefault(bucket, values.get("n"))
                buckets = list(sizes)
                labels = [b if sizes[b] is None else f"{b}\n(n={sizes[b]})" for b in buckets]
                _bars(
                    ax,
                    runs,
                    colors,
                    buckets,
                    lambda run, b, task=task, per_run=per_run: _bucket_score(task, per_run[run.label].get(b)),  # type: ignore[misc]  # as above
                )
                ax.set_xticks(range(len(buckets)), labels, fontsize=7, rotation=30 if len(buckets) > 4 else 0)
                ax.set_title(name, fontsize=10)
                ax.set_ylabel("score, x100")
            _legend(fig)
            metrics = ", ".join(TASKS[task].metrics)
            plots.append(
                _plot(
                    fig,
                    f"slices-{task}",
                    f"{task}: scores per slice",
                    f"Score on each bucket: the mean of {metrics} (x100), as the task score; "
                    "no bar: the run has no score for that bucket (too few examples).",
                )
            )
    return plots


def lidirus_plot(runs: Sequence[Run]) -> Plot | None:
    """LiDiRus MCC per linguistic feature: the four coarse fields and each fine tag."""
    tags = list(dict.fromkeys(t for run in runs for t in _section(run, "lidirus", "breakdown")))
    if not tags:
        return None
    colors = run_colors(runs)
    with _figure(0.22 * len(tags) * max(1.0, len(runs) / 2) + 1.2) as fig:
        ax = fig.add_subplot()
        breakdowns = {run.label: _section(run, "lidirus", "breakdown") for run in runs}
        _bars(ax, runs, colors, tags, lambda run, t: breakdowns[run.label].get(t, {}).get("mcc"), horizontal=True)
        sizes = {t: values.get("n") for breakdown in breakdowns.values() for t, values in breakdown.items()}
        labels = [t if sizes.get(t) is None else f"{t} (n={sizes[t]})" for t in tags]
        ax.set_yticks(range(len(tags)), labels, fontsize=8)
        for label, tag in zip(ax.get_yticklabels(), tags, strict=True):
            if ":" not in tag:
                label.set_fontweight("bold")  # a coarse feature field ("logic"), not a tag ("logic: Negation")
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlim(-100, 100)
        ax.set_xlabel("MCC, x100")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
        return _plot(
            fig,
            "lidirus",
            "LiDiRus: MCC per linguistic feature",
            "Bold: the coarse feature fields; below each, its fine tags. n: examples carrying the tag.",
        )


def industrial_plots(runs: Sequence[Run]) -> list[Plot]:
    """RSG-style industrial figures: per run (throughput, latency, memory, size) and per task."""
    colors = run_colors(runs)
    plots = []
    panels = [
        (key, label)
        for key, label in INDUSTRIAL_PANELS
        if any(run.results.industrial.get(key) is not None for run in runs)
    ]
    if panels:
        with _figure(3.2) as fig:
            for i, (key, label) in enumerate(panels):
                ax = fig.add_subplot(1, len(panels), i + 1)
                values = [run.results.industrial.get(key) for run in runs]
                shown = [(run.label, v) for run, v in zip(runs, values, strict=True) if v is not None]
                ax.bar(range(len(shown)), [v for _, v in shown], color=[colors[name] for name, _ in shown])
                ax.set_xticks(range(len(shown)), [name for name, _ in shown], rotation=30, ha="right", fontsize=8)
                ax.set_title(label, fontsize=9)
                ax.grid(axis="y", alpha=0.3)
            plots.append(
                _plot(
                    fig,
                    "industrial",
                    "Industrial figures per run",
                    "As RSG's industrial assessment: throughput, latency, peak memory, model size.",
                )
            )
    tasks = [t for t in TASKS if any(_section(run, t, "industrial") for run in runs)]
    if tasks:
        with _figure(3.6) as fig:
            ax = fig.add_subplot()
            _bars(
                ax,
                runs,
                colors,
                tasks,
                lambda run, t: _section(run, t, "industrial").get("latency_ms_per_example"),
            )
            ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right", fontsize=8)
            ax.set_ylabel("latency, ms per example")
            _legend(fig)
            plots.append(_plot(fig, "industrial-tasks", "Latency per task", "Milliseconds per example, per task."))
    return plots


def _bars(
    ax: Axes,
    runs: Sequence[Run],
    colors: Mapping[str, Any],
    groups: Sequence[str],
    value: Callable[[Run, str], float | None],
    interval: Callable[[Run, str], tuple[float, float] | None] | None = None,
    horizontal: bool = False,
) -> None:
    """A bar per group and run, grouped; runs without any value get no slot, a missing value leaves a gap.
    ``interval`` adds whiskers (a confidence interval) where it gives one."""
    values = {run.label: [value(run, g) for g in groups] for run in runs}
    shown = [run for run in runs if any(v is not None for v in values[run.label])]
    width = 0.8 / max(1, len(shown))
    for i, run in enumerate(shown):
        at = [(x, v) for x, v in enumerate(values[run.label]) if v is not None]
        positions = [x - 0.4 + width * (i + 0.5) for x, _ in at]
        heights = [v for _, v in at]
        errors = _error_bars(heights, [interval(run, groups[x]) for x, _ in at]) if interval else None
        draw = ax.barh if horizontal else ax.bar
        whiskers: dict[str, Any] = {"xerr" if horizontal else "yerr": errors} if errors else {}
        draw(
            positions,
            heights,
            width,
            color=colors[run.label],
            label=run.label,
            capsize=2,
            **whiskers,
        )
    if horizontal:
        ax.set_yticks(range(len(groups)), groups)
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    else:
        ax.set_xticks(range(len(groups)), groups, fontsize=8)
        ax.grid(axis="y", alpha=0.3)


def _legend(fig: Figure) -> None:
    """One legend above the panels, naming each run once."""
    entries: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    fig.legend(entries.values(), entries.keys(), loc="outside upper center", ncols=min(4, len(entries)), frameon=False)


def _bucket_score(task: str, values: Mapping[str, float] | None) -> float | None:
    present = [values[m] for m in TASKS[task].metrics if m in values] if values else []
    return fmean(present) if present else None


def _score_interval(result: TaskResult) -> tuple[float, float] | None:
    """The task score's confidence interval: its own, or its only metric's."""
    ci = result.ci
    if "score" in ci:
        return ci["score"][0], ci["score"][1]
    metrics = list(result.metrics)
    return (ci[metrics[0]][0], ci[metrics[0]][1]) if len(metrics) == 1 and metrics[0] in ci else None


def _error_bars(scores: Sequence[float], intervals: Sequence[tuple[float, float] | None]) -> list[list[float]] | None:
    if not any(intervals):
        return None
    low = [max(0.0, s - i[0]) if i else 0.0 for s, i in zip(scores, intervals, strict=True)]
    high = [max(0.0, i[1] - s) if i else 0.0 for s, i in zip(scores, intervals, strict=True)]
    return [low, high]


def _all_scores(runs: Sequence[Run], tasks: Sequence[str]) -> list[float]:
    return [s for run in runs for t in tasks if t in run.tasks and (s := run.tasks[t].score) is not None]


def _reference_curve(ax: Axes, task: str, metric: str, style: str) -> None:
    """TAPE's few-shot curve for the task and metric, when Table 3 has one."""
    points = []
    for k in (0, 1, 4, 8):
        row = reference(TAPE_BENCHMARK, TAPE, FEWSHOT_REFERENCE, k)
        if task in row.metrics and metric in row.metrics[task]:
            points.append((k, row.metrics[task][metric], row.std.get(task, {}).get(metric, 0.0)))
    if not points:
        return
    ks, mean, std = zip(*points, strict=True)
    ax.plot(ks, mean, style, color="grey", linewidth=1, label=f"{FEWSHOT_REFERENCE}: {metric}")
    ax.fill_between(
        ks,
        [m - s for m, s in zip(mean, std, strict=True)],
        [m + s for m, s in zip(mean, std, strict=True)],
        color="grey",
        alpha=0.1,
    )


def _reference_label(row: ScoreRow) -> str:
    k = "" if row.k is None else f", k={row.k}"
    return f"{row.name}{k} ({row.source})"


@contextmanager
def _figure(height: float) -> Iterator[Figure]:
    # Labels come from users' data (model names, slice buckets): '$' must stay a dollar sign, not math.
    with matplotlib.rc_context({"text.parse_math": False, "font.size": 9}):
        yield Figure(figsize=(11, max(2.5, height)), layout="constrained")


def _plot(fig: Figure, name: str, title: str, caption: str) -> Plot:
    buffer = io.BytesIO()
    FigureCanvasAgg(fig)  # render with Agg whatever the default backend is
    fig.savefig(buffer, format="png", dpi=100)
    return Plot(name, title, caption, buffer.getvalue())


def _section(run: Run, task: str, name: str) -> Mapping[str, Any]:
    """One section of a run's task result (perturbations, slices, breakdown, industrial); empty when absent."""
    return getattr(run.tasks[task], name) if task in run.tasks else {}
