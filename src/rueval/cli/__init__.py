"""The `rueval` command line: one thin function per command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from rueval import __version__
from rueval.cli.options import (
    AddsentModelOption,
    BaseUrlOption,
    BatchSizeOption,
    CacheMode,
    CacheOption,
    ConcurrencyOption,
    DataOption,
    DeviceMapOption,
    DeviceOption,
    DtypeName,
    DtypeOption,
    EpisodesOption,
    FallbackName,
    FallbackOption,
    FilterMinShareOption,
    FilterModelOption,
    FilterThresholdOption,
    LimitOption,
    LoadInOption,
    MaxLineOption,
    ModelOption,
    PeftOption,
    RevisionOption,
    RuleChoice,
    RulesOption,
    RunDirsArgument,
    ScoringName,
    ScoringOption,
    SeedOption,
    ShotsOption,
    SplitOption,
    TasksOption,
    TranslationModelOption,
    TrustRemoteCodeOption,
    console,
    errors,
    from_plain,
    parse_shots,
    plain,
    solver_options,
    user_errors,
)
from rueval.errors import RuevalError
from rueval.tasks import TASKS, get_task, resolve_tasks

app = typer.Typer(
    help="Evaluate Russian language models on RussianSuperGLUE and TAPE.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C


def robustness_options(
    perturb: str,
    seed: int,
    filter_model: str | None,
    translation_model: str | None,
    addsent_model: str | None,
    filter_threshold: float | None,
    filter_min_share: float,
    base_url: str | None,
):
    """The perturbations and semantic filter of --perturb, with notes on what `all` left out printed.
    ``base_url`` serves an `openai:` AddSent model."""
    from rueval.run.robustness import Robustness

    robustness = Robustness.from_options(
        perturb, seed, filter_model, translation_model, addsent_model, filter_threshold, filter_min_share, base_url
    )
    for note in robustness.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    return robustness


@app.command()
@user_errors
def tasks() -> None:
    """List the tasks with their labels, metrics and splits."""
    from rueval.report.table import tasks_table

    console.print(tasks_table(TASKS.values()))


def load_run_arguments(out: Path) -> dict[str, Any]:
    """The options the run in OUT was started with, as the command line gives them."""
    from rueval.run import RunStore

    return from_plain(RunStore(out).load_options())


@app.command()
@user_errors
def run(
    tasks: TasksOption = "all",
    model: ModelOption = "majority",
    data: DataOption = None,
    split: SplitOption = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output directory. Default: runs/<model>.")] = None,
    seed: SeedOption = 0,
    limit: LimitOption = None,
    fallback: FallbackOption = FallbackName.majority,
    rules: RulesOption = RuleChoice.fitted,
    slices: Annotated[
        Optional[str], typer.Option(help="Score per TAPE subpopulation: all, or comma-separated slice names.")
    ] = None,
    shots: ShotsOption = "0",
    episodes: EpisodesOption = 1,
    scoring: ScoringOption = ScoringName.loglik,
    device: DeviceOption = "cpu",
    dtype: DtypeOption = DtypeName.auto,
    batch_size: BatchSizeOption = "auto",
    trust_remote_code: TrustRemoteCodeOption = False,
    revision: RevisionOption = None,
    device_map: DeviceMapOption = None,
    peft: PeftOption = None,
    load_in: LoadInOption = None,
    base_url: BaseUrlOption = None,
    concurrency: ConcurrencyOption = 8,
    cache: CacheOption = CacheMode.on,
    perturb: Annotated[
        Optional[str],
        typer.Option(help="Also score perturbed examples and attack success rates: all, or NAME[:RATE],..."),
    ] = None,
    filter_model: FilterModelOption = None,
    filter_threshold: FilterThresholdOption = None,
    filter_min_share: FilterMinShareOption = 0.0,
    translation_model: TranslationModelOption = None,
    addsent_model: AddsentModelOption = None,
    max_line_mb: MaxLineOption = 20.0,
    force: Annotated[
        bool, typer.Option(help="Replace another run's results in OUT (by default the run stops before any work).")
    ] = False,
    resume: Annotated[
        bool, typer.Option(help="Continue the interrupted run in OUT (-o) with the options it was started with.")
    ] = False,
) -> None:
    """Score a model on tasks; write OUT/results.json and OUT/predictions/<task>.jsonl.

    Rerunning into the same OUT resumes: finished tasks and computed LM requests are reused."""
    options = {name: value for name, value in locals().items() if name not in ("resume", "out", "force")}
    if resume:
        if out is None:
            raise RuevalError("--resume needs the run's output directory: -o OUT")
        return run(**load_run_arguments(out), out=out)
    if data is not None and data != "hf" and Path(data).exists():
        options["data"] = data = str(Path(data).resolve())  # saved absolute: --resume works from anywhere
    out = out or Path("runs") / re.sub(r"[^\w.-]+", "_", model)
    from rueval.report.table import industrial_text, perturbations_table, results_table, slices_table
    from rueval.run import run as run_tasks
    from rueval.slices import resolve_slices

    robustness = None
    if perturb:
        robustness = robustness_options(
            perturb, seed, filter_model, translation_model, addsent_model, filter_threshold, filter_min_share, base_url
        )
    try:
        summary = run_tasks(
            resolve_tasks(tasks),
            model,
            out,
            data,
            split.value if split else None,
            seed,
            limit,
            solver_options=solver_options(model, plain(options)),
            slices=resolve_slices(slices) if slices else (),
            shots=parse_shots(shots),
            episodes=episodes,
            robustness=robustness,
            options=plain(options),
            force=force,
            max_line_bytes=int(max_line_mb * 2**20),
        )
    except KeyboardInterrupt:
        message = f"interrupted: finished work is kept; continue with: rueval run --resume -o {out}"
        errors.print(message, highlight=False, soft_wrap=True)
        raise typer.Exit(INTERRUPTED) from None
    for note in summary.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    console.print(results_table(summary))
    if slices:
        console.print(slices_table(summary))
    if robustness:
        console.print(perturbations_table(summary))
    if summary.industrial:
        console.print(industrial_text(summary.industrial), highlight=False)
    else:
        console.print("industrial: every task was reused; their figures are in OUT/tasks/*.json", highlight=False)
    console.print(f"results: {out / 'results.json'}", highlight=False)


@app.command()
@user_errors
def perturb(
    tasks: TasksOption = "tape",
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory: a folder per task.")] = Path("perturbed"),
    perturbations: Annotated[str, typer.Option(help="all, or comma-separated NAME[:RATE].")] = "all",
    seed: SeedOption = 0,
    split: SplitOption = None,
    limit: LimitOption = None,
    filter_model: FilterModelOption = None,
    filter_threshold: FilterThresholdOption = None,
    filter_min_share: FilterMinShareOption = 0.0,
    translation_model: TranslationModelOption = None,
    addsent_model: AddsentModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Write perturbed test sets in TAPE's episodes layout (OUT/<task>/test.jsonl, `perturbation` field)."""
    from rueval.run.robustness import write_attack_sets

    robustness = robustness_options(
        perturbations,
        seed,
        filter_model,
        translation_model,
        addsent_model,
        filter_threshold,
        filter_min_share,
        base_url,
    )
    counts = write_attack_sets(robustness, resolve_tasks(tasks), data, out, split.value if split else None, limit)
    for task, written in counts.items():
        console.print(f"{task}: " + ", ".join(f"{name} {n}" for name, n in written.items()), highlight=False)
    console.print(f"perturbed sets: {out}", highlight=False)


@app.command()
@user_errors
def submit(
    model: ModelOption = "majority",
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The zip file to write.")] = Path("submission.zip"),
    seed: SeedOption = 0,
    fallback: FallbackOption = FallbackName.majority,
    rules: RulesOption = RuleChoice.fitted,
    shots: Annotated[int, typer.Option(min=0, help="LMs: few-shot demonstrations (episode 0).")] = 0,
    scoring: ScoringOption = ScoringName.loglik,
    device: DeviceOption = "cpu",
    dtype: DtypeOption = DtypeName.auto,
    batch_size: BatchSizeOption = "auto",
    trust_remote_code: TrustRemoteCodeOption = False,
    revision: RevisionOption = None,
    device_map: DeviceMapOption = None,
    peft: PeftOption = None,
    load_in: LoadInOption = None,
    base_url: BaseUrlOption = None,
    concurrency: ConcurrencyOption = 8,
    cache: CacheOption = CacheMode.on,
) -> None:
    """Predict the RSG test sets and write the leaderboard submission zip."""
    from rueval.submit import submit as write_submission

    options = plain({name: value for name, value in locals().items() if name not in ("out", "data", "seed", "shots")})
    written = write_submission(model, data, out, seed, solver_options(model, options), shots)
    console.print(f"wrote {out}: " + ", ".join(f"{name} ({n} lines)" for name, n in written.items()), highlight=False)


@app.command()
@user_errors
def heuristics(
    task: Annotated[str, typer.Option("--task", "-t", help="The task whose heuristic rules to measure.")],
    data: DataOption = None,
    split: SplitOption = None,
) -> None:
    """Per heuristic rule: how many examples it covers, and how many of those it gets right."""
    from rueval.data import eval_split, open_data
    from rueval.report.table import heuristics_table
    from rueval.solvers.heuristics import RULES, coverage

    chosen = get_task(task)
    if chosen.name not in RULES:
        raise RuevalError(f"{chosen.name} has no heuristic rules; tasks with rules: {', '.join(RULES)}")
    measured = eval_split(open_data(data), chosen, split.value if split else None, None)
    rows = coverage(chosen, measured.examples)
    console.print(heuristics_table(chosen.name, measured.name, len(measured.examples), rows))


@app.command()
@user_errors
def audit(
    tasks: TasksOption = "all",
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory for audit.json.")] = Path("audits"),
) -> None:
    """Audit datasets: label shares and prior-only scores, artifact tokens, train/eval duplicates, rule coverage."""
    from rueval.audit import audit as audit_tasks
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
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the comparison to this JSON file.")] = None,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")] = 1000,
    seed: SeedOption = 0,
) -> None:
    """Paired-bootstrap differences of two runs per task and metric, with p-values."""
    from rueval.files import write_json
    from rueval.report.compare import compare_runs
    from rueval.report.table import compare_table

    comparison = compare_runs(run_a, run_b, resamples=resamples, seed=seed)
    console.print(compare_table(comparison))
    if out:
        write_json(out, comparison)
        console.print(f"comparison: {out}", highlight=False)


@app.command()
@user_errors
def report(
    runs: RunDirsArgument,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    assets: Annotated[
        Optional[Path], typer.Option(help="Folder for the figures as PNG files. Default: <out>.assets/ beside OUT.")
    ] = None,
) -> None:
    """One self-contained HTML page comparing runs with the papers' reference numbers."""
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
) -> None:
    """Build a tiny random GPT-2 with a tokenizer trained on the bundled samples, to try -m hf: offline."""
    from rueval.models.tiny import build_tiny_gpt2

    try:
        built = build_tiny_gpt2(out)
    except ImportError as e:  # a model needs torch, transformers and tokenizers
        raise RuevalError(f"{e.name} is not installed: pip install torch && pip install 'rueval[lm]'") from None
    console.print(f"tiny model: {built}; try: rueval run -m hf:{built} -t parus", highlight=False)


@app.command()
def version() -> None:
    """Print the rueval version."""
    console.print(__version__)


def main() -> None:
    app()
