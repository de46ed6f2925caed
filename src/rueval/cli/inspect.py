"""The commands that look at tasks, data and finished runs: tasks, heuristics, audit, compare, power, report,
leaderboard, export, make-tiny-model, version."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rueval import __version__
from rueval.cli.app import app
from rueval.cli.option_types import (
    DataOption,
    QuietOption,
    RunDirsArgument,
    SeedOption,
    SplitOption,
    TasksOption,
    VerboseOption,
    console,
    user_errors,
)
from rueval.cli.task_file_options import IncludePathOption
from rueval.core.errors import RuevalError
from rueval.core.progress import info, set_level
from rueval.tasks import BENCHMARKS, MERA, TASKS, resolve_tasks


@app.command()
@user_errors
def tasks(include_path: IncludePathOption = None) -> None:
    """List rueval's tasks with their labels, metrics and splits; with --include-path, the lm-eval task files
    there: each task, group and tag, its file, output type, and the Python it runs (--trust-task-code)."""
    from rueval.report.table import task_files_table, tasks_table

    if not include_path:
        console.print(tasks_table(TASKS.values()))
        return
    from rueval.run.spec import RunSpec
    from rueval.tasks.lm_eval_tasks import TaskFiles

    folders = RunSpec.include_folders(include_path)
    console.print(task_files_table(TaskFiles.finding([], folders).listing()))


@app.command()
@user_errors
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run directory that predicted a benchmark's test splits.")],
    format: Annotated[str, typer.Option("--format", help="The submission format: a benchmark's name.")] = MERA.name,
    out: Annotated[Path, typer.Option("--out", "-o", help="The zip file to write.")] = Path("submission.zip"),
) -> None:
    """Write a run's test predictions as a benchmark's submission zip (MERA: one <Task>.json per task;
    rsg: RussianSuperGLUE's leaderboard zip), each checked to be as the run computed it."""
    from rueval.core.named import named

    formats = {name: benchmark for name, benchmark in BENCHMARKS.items() if benchmark.submission}
    if format not in formats:
        raise RuevalError(f"--format {format}: expected one of {', '.join(formats)}")
    benchmark = formats[format]
    written = named(benchmark.submission, f"{benchmark.title}'s submission writer")(run_dir, out)
    console.print(f"wrote {out}: " + ", ".join(f"{name} ({n})" for name, n in written.items()), highlight=False)


@app.command()
@user_errors
def heuristics(
    tasks: TasksOption = "all",
    data: DataOption = None,
    split: SplitOption = None,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Per heuristic rule: how many examples it covers, and how many of those it gets right."""
    set_level(quiet, verbose)
    from rueval.data import eval_split, open_data
    from rueval.report.table import heuristics_table
    from rueval.solvers.heuristics import RULES, coverage

    chosen = resolve_tasks(tasks)
    without = [task.name for task in chosen if task.name not in RULES]
    if len(without) == len(chosen):
        have = "has" if len(without) == 1 else "have"
        raise RuevalError(f"{', '.join(without)} {have} no heuristic rules; tasks with rules: {', '.join(RULES)}")
    if without:
        info(f"no heuristic rules, left out: {', '.join(without)}")
    opened = open_data(data)
    for task in chosen:
        if task.name in RULES:
            measured = eval_split(opened, task, split.value if split else None, None)
            rows = coverage(task, measured.examples)
            console.print(heuristics_table(task.name, measured.name, len(measured.examples), rows))


@app.command()
@user_errors
def audit(
    tasks: TasksOption = "all",
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory for audit.json.")] = Path("audits"),
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Audit datasets: label shares and prior-only scores, artifact tokens, train/eval duplicates, rule coverage."""
    set_level(quiet, verbose)
    from rueval.audit.dataset_audit import audit as audit_tasks
    from rueval.report.table import audit_tables

    report = audit_tasks(resolve_tasks(tasks), data, out)
    for table in audit_tables(report):
        console.print(table)
    console.print(f"audit: {out / 'audit.json'}", highlight=False)


@app.command()
@user_errors
def compare(
    run_a: Annotated[Path, typer.Argument(help="A run directory (results.json, predictions/).")],
    run_b: Annotated[Path, typer.Argument(help="Another run directory, scored on the same examples.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the comparison to this JSON file.")] = None,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")] = 1000,
    seed: SeedOption = 0,
) -> None:
    """Differences of two runs per task and metric with their paired test (McNemar's exact test for right/wrong
    items, else the paired bootstrap), each task's minimum detectable effect, and standard errors clustered by
    item where a run scored items several times."""
    from rueval.core.files import write_json
    from rueval.report.compare import compare_runs
    from rueval.report.table import compare_notes, compare_table

    comparison = compare_runs(run_a, run_b, resamples=resamples, seed=seed)
    console.print(compare_table(comparison))
    for line in compare_notes(comparison):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if out:
        write_json(out, comparison)
        console.print(f"comparison: {out}", highlight=False)


@app.command()
@user_errors
def power(
    tasks: TasksOption,
    delta: Annotated[
        float, typer.Option("--delta", help="The difference to show, in metric points (2 = two points of accuracy).")
    ],
    discordance: Annotated[
        float | None,
        typer.Option(
            help="The share of items two runs disagree on (0 to 1; `rueval compare` prints a pair's). "
            "Default: 0.5, two independent runs of 50% accuracy, the most items independent errors need."
        ),
    ] = None,
) -> None:
    """How many items a test set needs to show a difference of --delta points between two runs at 80% power
    (McNemar's test, two-sided 5%), and the smallest difference each task's official test set shows."""
    from rueval.scoring.decisions import DEFAULT_DISCORDANCE, items_needed, minimum_detectable_effect

    share = DEFAULT_DISCORDANCE if discordance is None else discordance
    if not 0 < share <= 1:
        raise RuevalError(f"--discordance {share:g}: expected a share of the items, above 0 and at most 1")
    if not 0 < delta <= 100 * share:
        raise RuevalError(
            f"--delta {delta:g}: expected above 0 and at most the discordance in points ({100 * share:g}): "
            "two runs differ on no more items than they disagree on"
        )
    needed = items_needed(delta / 100, share)
    for task in resolve_tasks(tasks):
        official = BENCHMARKS[task.benchmark].official_count(task.name, "test")
        line = f"{task.name}: {needed:,} items show {delta:g} points at 80% power (discordance {share:g})"
        if official:
            effect = minimum_detectable_effect(official, share)
            shown = "no difference (too few items)" if effect is None else f"{100 * effect:.1f} points"
            line += f"; its official test set of {official:,} records shows {shown}"
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
@user_errors
def report(
    runs: RunDirsArgument,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    assets: Annotated[
        Path | None, typer.Option(help="Folder for the figures as PNG files. Default: <out>.assets/ beside OUT.")
    ] = None,
) -> None:
    """One self-contained HTML page comparing runs with the papers' reference numbers; a folder `rueval
    contamination` wrote adds its audit's section."""
    from rueval.report.html import write_report

    written = write_report(runs, out, assets)
    console.print(f"report: {written.html}; {len(written.figures)} figures in {written.assets}", highlight=False)


@app.command()
@user_errors
def leaderboard(
    runs: RunDirsArgument,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the Markdown and CSV tables.")] = Path(
        "leaderboard"
    ),
) -> None:
    """RSG-style and TAPE-style leaderboard tables: the runs among the papers' human and baseline rows."""
    from rueval.report.leaderboard import write_leaderboard

    for board, markdown, csv in write_leaderboard(runs, out):
        console.print(f"## {board.title}\n\n{board.markdown()}", markup=False, highlight=False, soft_wrap=True)
        console.print(f"written: {markdown}, {csv}\n", highlight=False)


@app.command("make-tiny-model")
@user_errors
def make_tiny_model(
    out: Annotated[Path, typer.Argument(help="The folder to write the model and its tokenizer to.")],
    train_steps: Annotated[
        int,
        typer.Option(
            min=0, help="Then train it for N batches of the bundled samples: its answers and texts are not random."
        ),
    ] = 0,
) -> None:
    """Build a tiny random GPT-2 with a tokenizer trained on the bundled samples, to try -m hf: offline."""
    from rueval.models.backends.tiny import build_tiny_gpt2, sample_texts, train_tiny_model

    try:
        built = build_tiny_gpt2(out)
        if train_steps:
            train_tiny_model(built, sample_texts(), train_steps)
    except ImportError as e:  # a model needs torch, transformers and tokenizers
        raise RuevalError(f"{e.name} is not installed: pip install torch && pip install 'rueval[lm]'") from None
    trained = f" (trained {train_steps} steps)" if train_steps else ""
    console.print(f"tiny model{trained}: {built}; try: rueval run -m hf:{built} -t parus", highlight=False)


@app.command()
def version() -> None:
    """Print the rueval version."""
    console.print(__version__)
