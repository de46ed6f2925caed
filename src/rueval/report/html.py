"""The diagnostic report: one self-contained HTML page comparing runs (TAPE, Section 3.3).

Inline CSS, figures embedded as base64 PNGs (also saved beside the page), no scripts and no
external resources, so the page opens anywhere, offline. Every string from results files is
escaped. Runs with sample logs get a per-example view (rueval.report.examples).
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from rueval import __version__
from rueval.core.files import atomic_path, write_text
from rueval.report import examples, plots
from rueval.report.contamination import contamination_section, is_contamination_folder
from rueval.report.leaderboard import TASK_FILES, Board, boards, format_score
from rueval.report.plots import Plot
from rueval.report.reference import CITATIONS
from rueval.report.runs import Run, load_runs, task_names
from rueval.results import INDUSTRIAL_FIELDS, PromptScores
from rueval.results.contamination import ContaminationResult
from rueval.tasks import BENCHMARKS, TASKS

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 1.5em 2em 4em; color: #1d232b; background: #fff; line-height: 1.45; }
h1 { margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 2px solid #d8dee6; padding-bottom: .2em; }
h3 { margin-top: 1.5em; }
nav a { margin-right: 1em; } .muted { color: #5b6573; font-size: .9em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .85em; }
th, td { border: 1px solid #d8dee6; padding: .3em .55em; text-align: right; vertical-align: top; }
th { background: #eef2f6; text-align: center; } td.text { text-align: left; min-width: 8em; }
tr.run td { background: #fff6d6; font-weight: 600; } tr.human td { background: #e8f4ea; }
tr.paper td { color: #3b4450; } .scroll { overflow-x: auto; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #e3e7ec; }
figcaption { font-size: .85em; color: #5b6573; } .ci { color: #5b6573; font-weight: normal; font-size: .85em; }
"""


@dataclass(frozen=True)
class ReportFiles:
    """What `write_report` wrote."""

    html: Path
    assets: Path
    figures: list[Path]


def write_report(run_dirs: Sequence[Path], out: Path, assets: Path | None = None) -> ReportFiles:
    """Read the runs, draw the figures into ASSETS (default: OUT's name + .assets/), write OUT. A folder that
    `rueval contamination` wrote (contamination.json, no results.json) is shown as the contamination section."""
    audits = [ContaminationResult.read(Path(d)) for d in run_dirs if is_contamination_folder(Path(d))]
    run_dirs = [d for d in run_dirs if not is_contamination_folder(Path(d))]
    runs = load_runs(run_dirs) if run_dirs or not audits else []
    assets = assets or out.with_suffix(".assets")
    figures = all_plots(runs) if runs else []
    paths = []
    for figure in figures:
        paths.append(assets / f"{figure.name}.png")
        with atomic_path(paths[-1]) as tmp:
            tmp.write_bytes(figure.png)
    write_text(out, render(runs, figures, audits))
    return ReportFiles(out, assets, paths)


def all_plots(runs: Sequence[Run]) -> list[Plot]:
    """Every figure the runs have data for, in page order."""
    drawn = [
        *(plots.score_plot(runs, benchmark) for benchmark in BENCHMARKS.values() if benchmark.references),
        plots.fewshot_plot(runs),
        plots.attack_plot(runs),
        *plots.slice_plots(runs),
        plots.lidirus_plot(runs),
        *plots.industrial_plots(runs),
    ]
    return [p for p in drawn if p is not None]


def render(runs: Sequence[Run], figures: Sequence[Plot], audits: Sequence[ContaminationResult] = ()) -> str:
    """The whole page."""
    by_name = {f.name: f for f in figures}
    sections = (
        []
        if not runs
        else [
            ("runs", "Runs", _runs_table(runs)),
            *((b.benchmark.name, b.benchmark.title, _board_section(b, by_name)) for b in boards(runs)),
            ("metrics", "Per-task metrics", _metrics_table(runs)),
            ("fewshot", "Few-shot curves", _figure(by_name.get("fewshot"))),
            (
                "robustness",
                "Robustness",
                _figure(by_name.get("attacks")) + _robustness_summary(runs) + _attacks_table(runs),
            ),
            ("slices", "Subpopulations", _figures(figures, "slices-")),
            ("lidirus", "LiDiRus diagnostics", _figure(by_name.get("lidirus"))),
            ("industrial", "Industrial figures", _industrial_table(runs) + _figures(figures, "industrial")),
            ("examples", "Per-example view", examples.examples_section(runs)),
        ]
    )
    sections += [("contamination", "Contamination audit", "".join(map(contamination_section, audits)))]
    sections = [(anchor, title, body) for anchor, title, body in sections if body]
    sections.append(("references", "References", _references()))
    nav = "".join(f'<a href="#{anchor}">{escape(title)}</a>' for anchor, title, _ in sections)
    created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = "".join(
        f'<section id="{anchor}"><h2>{escape(title)}</h2>{html}</section>' for anchor, title, html in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>rueval report: {escape(', '.join(run.label for run in runs))}</title>"
        f"<style>{CSS}{examples.CSS}</style></head>"
        f"<body><h1>rueval report</h1><p class=muted>{len(runs)} run(s), generated {created} by rueval "
        f"{escape(__version__)}. Scores are percentages (x100), as in the papers.</p><nav>{nav}</nav>{body}"
        "</body></html>\n"
    )


def _runs_table(runs: Sequence[Run]) -> str:
    rows = []
    for run in runs:
        r = run.results
        total = r.rsg_total
        rows.append(
            [
                run.label,
                r.model,
                str(r.settings.get("seed", "")),
                r.data,
                str(run.dir),
                str(len(run.tasks)),
                "–" if total is None else format_score(total),
                r.created,
            ]
        )
    header = ["run", "model", "seed", "data", "directory", "tasks", "RSG total", "created"]
    return _table(header, rows, text_columns={0, 1, 3, 4, 7})


def _board_section(board: Board, figures: Mapping[str, Plot]) -> str:
    rows, classes = [], []
    for rank, row in board.ranked():
        rows.append(board.cells(rank, row))
        classes.append("run" if not row.is_reference else "human" if row.kind == "human" else "paper")
    table = _table(board.header(), rows, text_columns={1, len(board.header()) - 1}, row_classes=classes)
    notes = dict.fromkeys(f"{row.name} ({row.source}): {row.note}" for row in board.rows if row.note)
    if board.ties_note:
        notes[board.ties_note] = None
    notes_html = "".join(f"<li>{escape(n)}</li>" for n in notes)
    intro = (
        "<p class=muted>Runs (highlighted) ranked among the papers' rows, which are cited in the Source column and "
        "were scored on the official test sets, not on this run's data. A run of part of each split (partial), "
        "or of other data than the official files (not comparable: the bundled samples, or another number of "
        "records), is shown unranked. Cells: each metric of the task, in the order of the column header; ± is "
        "the std over few-shot episodes.</p>"
    )
    if board.benchmark is TASK_FILES:
        intro = (
            "<p class=muted>Runs of lm-eval task files, ranked among themselves by their mean score (each task's "
            "first metric) over the tasks, not groups, that every one of them scored. A run of part of each split "
            "(partial) is shown unranked.</p>"
        )
    notes_list = f"<ul class=muted>{notes_html}</ul>" if notes else ""
    return intro + table + notes_list + _figure(figures.get(f"scores-{board.benchmark.name}"))


def _metrics_table(runs: Sequence[Run]) -> str:
    rows = []
    for task in task_names(runs):
        for run in runs:
            if task not in run.tasks:
                continue
            result = run.tasks[task]
            ci = result.ci
            metrics = "<br>".join(
                f"{escape(m)} {format_score(v)}" + (_interval(ci[m]) if m in ci else "")
                for m, v in result.metrics.items()
            )
            rows.append(
                [
                    escape(task),
                    escape(run.label),
                    escape(result.split),
                    str(result.n),
                    metrics,
                    format_score(result.score) + _over_prompts(result.prompts),
                ]
            )
    header = ["task", "run", "split", "n", "metrics (95% CI when computed)", "score"]
    return _table(header, rows, text_columns={0, 1, 2, 4}, raw=True)


def _over_prompts(prompts: PromptScores | None) -> str:
    """A task scored under several prompts: their mean ± std, below its (the default prompt's) score."""
    if prompts is None:
        return ""
    spread = f"{format_score(prompts.mean)}&nbsp;±{format_score(prompts.std)}"
    return f'<br><span class="ci">{len(prompts.variants)} prompts: {spread}</span>'


def _attacks_table(runs: Sequence[Run]) -> str:
    rows = []
    for task in TASKS:
        for run in runs:
            for name, attack in (run.tasks[task].perturbations if task in run.tasks else {}).items():
                metrics = ", ".join(f"{m} {format_score(v)}" for m, v in attack["metrics"].items())
                rows.append(
                    [
                        task,
                        run.label,
                        name,
                        str(attack.get("n", "")),
                        metrics,
                        _optional(attack.get("score")),
                        _optional(attack.get("asr")),
                    ]
                )
    if not rows:
        return ""
    return _table(["task", "run", "perturbation", "n", "metrics", "score", "ASR, %"], rows, text_columns={0, 1, 2, 4})


def _robustness_summary(runs: Sequence[Run]) -> str:
    """Per task and run: the worst perturbation and the share of test items each one left unchanged."""
    rows = []
    for task in TASKS:
        for run in runs:
            summary = run.tasks[task].robustness if task in run.tasks else None
            if summary is None:
                continue
            worst = f"{summary.worst} {format_score(summary.worst_score)}" if summary.worst else "-"
            original = _optional(summary.worst_original_score)
            unchanged = ", ".join(
                f"{name} {'-' if share is None else f'{100 * share:.0f}%'}" for name, share in summary.unchanged.items()
            )
            rows.append([task, run.label, worst, original, unchanged])
    if not rows:
        return ""
    header = ["task", "run", "worst perturbation: score", "its originals' score", "test items left unchanged"]
    return _table(header, rows, text_columns={0, 1, 2, 4})


def _industrial_table(runs: Sequence[Run]) -> str:
    rows = [
        [run.label, *(_measure(run.results.industrial.get(f)) for f in INDUSTRIAL_FIELDS)]
        for run in runs
        if run.results.industrial
    ]
    if not rows:
        return ""
    header = ["run", "examples/s", "latency, ms/example", "peak RSS, MB", "model size, MB", "parameters"]
    return _table(header, rows, text_columns={0})


def _references() -> str:
    items = "".join(f"<li><b>{escape(key)}</b>: {escape(text)}</li>" for key, text in CITATIONS.items())
    return f"<ul>{items}</ul>"


def _figures(figures: Sequence[Plot], prefix: str) -> str:
    return "".join(_figure(f) for f in figures if f.name.startswith(prefix))


def _figure(figure: Plot | None) -> str:
    if figure is None:
        return ""
    data = base64.b64encode(figure.png).decode("ascii")
    return (
        f'<figure><h3>{escape(figure.title)}</h3><img alt="{escape(figure.title)}" '
        f'src="data:image/png;base64,{data}"><figcaption>{escape(figure.caption)} '
        f"(also saved as {escape(figure.name)}.png)</figcaption></figure>"
    )


def _table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    text_columns: Collection[int] = (),
    row_classes: Sequence[str] | None = None,
    raw: bool = False,
) -> str:
    """An HTML table; cells are escaped unless ``raw`` (then the caller escaped them)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = []
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes else ""
        cells = "".join(
            f"<td{' class=text' if j in text_columns else ''}>{cell if raw else _numbers_unbroken(cell)}</td>"
            for j, cell in enumerate(row)
        )
        lines.append(f"<tr{cls}>{cells}</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(lines)}</tbody></table></div>'


def _numbers_unbroken(cell: str) -> str:
    """Escaped, with lines breaking only between a cell's metrics ("36.9 ±0.4 / 54.8 ±6.5")."""
    return escape(cell).replace(" ±", "&nbsp;±").replace(" / ", "&nbsp;/ ")


def _interval(bounds: Sequence[float]) -> str:
    return f' <span class="ci">[{format_score(bounds[0])}, {format_score(bounds[1])}]</span>'


def _optional(value: Any) -> str:
    if value is None:
        return "–"
    return format_score(value) if isinstance(value, float) else str(value)


def _measure(value: float | None) -> str:
    """An industrial figure: thousands grouped, three significant digits below 100."""
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
