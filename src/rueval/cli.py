"""The `rueval` command line: one thin function per command."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from rueval import __version__
from rueval.errors import RuevalError
from rueval.tasks import TASKS, get_task, resolve_tasks

app = typer.Typer(
    help="Evaluate Russian language models on RussianSuperGLUE and TAPE.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
errors = Console(stderr=True)


class SplitName(str, Enum):
    val = "val"
    test = "test"


class FallbackName(str, Enum):
    majority = "majority"
    random = "random"
    weighted_random = "weighted-random"


class RuleChoice(str, Enum):
    fitted = "fitted"
    all = "all"


def user_errors(command: Callable) -> Callable:
    """Bad input ends in one line on stderr and exit code 2, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except RuevalError as e:
            errors.print(Text.assemble(("error:", "bold red"), f" {e}"), highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


TasksOption = Annotated[str, typer.Option("--tasks", "-t", help="Comma-separated task names, or rsg, tape, all.")]
ModelOption = Annotated[
    str,
    typer.Option(
        "--model", "-m", help="majority, random, weighted-random, heuristic, tfidf, hf:PATH_OR_HUB_ID or openai:MODEL."
    ),
]
DataOption = Annotated[
    Optional[str],
    typer.Option("--data", help="A directory or zip in the official layout, or 'hf'. Default: the bundled samples."),
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed for every random choice.")]
BaseUrlOption = Annotated[
    Optional[str], typer.Option(help="openai: models (-m, --addsent-model): the server, e.g. http://localhost:8000/v1.")
]
FallbackOption = Annotated[
    FallbackName, typer.Option("--fallback", help="-m heuristic: the baseline for examples no rule covers.")
]
RulesOption = Annotated[
    RuleChoice,
    typer.Option(
        "--rules",
        help="-m heuristic: fitted (the rules that beat the fallback on train) or all (every rule of the paper).",
    ),
]
FilterModelOption = Annotated[
    Optional[str],
    typer.Option(help="Semantic filter: BERTScore with this encoder. Default: character 3-gram similarity, offline."),
]
FilterThresholdOption = Annotated[
    Optional[float], typer.Option(min=0, max=1, help="Semantic filter: least similarity. Default 0.6 (BERTScore 0.8, TAPE's).")
]
FilterMinShareOption = Annotated[
    float, typer.Option(min=0, max=1, help="Semantic filter: lower the threshold until this share passes (TAPE: 0).")
]
TranslationModelOption = Annotated[
    Optional[str], typer.Option(help="back_translation: RU_EN,EN_RU seq2seq models (default Helsinki-NLP opus-mt).")
]
AddsentModelOption = Annotated[Optional[str], typer.Option(help="add_sent: a transformers causal LM, name or path.")]


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
    from rueval.robustness import Robustness

    robustness = Robustness.from_options(
        perturb, seed, filter_model, translation_model, addsent_model, filter_threshold, filter_min_share, base_url
    )
    for note in robustness.notes:
        console.print(f"note: {note}", highlight=False)
    return robustness


class ScoringName(str, Enum):
    loglik = "loglik"
    ppl = "ppl"


class DtypeName(str, Enum):
    auto = "auto"
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"


def solver_options(
    model: str, fallback: FallbackName, rules: RuleChoice, lm: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """Model-specific options for make_solver: the heuristic model takes a fallback and a rule
    choice, language models (hf:..., openai:...) their backend and scoring options."""
    if model == "heuristic":
        return {"fallback": fallback.value, "rules": rules.value}
    if model.partition(":")[0] in ("hf", "openai"):
        return lm
    return None


def parse_shots(text: str) -> list[int]:
    try:
        shots = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise RuevalError(f"--shots {text}: expected comma-separated numbers of demonstrations, e.g. 0,1,4,8") from None
    if not shots or any(k < 0 for k in shots):
        raise RuevalError(f"--shots {text}: expected comma-separated non-negative numbers, e.g. 0,1,4,8")
    return shots


def parse_batch_size(text: str) -> int | str:
    if text == "auto" or (text.isdigit() and int(text) > 0):
        return text if text == "auto" else int(text)
    raise RuevalError(f"--batch-size {text}: expected a positive number or auto")


@app.command()
@user_errors
def tasks() -> None:
    """List the tasks with their labels, metrics and splits."""
    from rueval.report.table import tasks_table

    console.print(tasks_table(TASKS.values()))


RUN_ARGUMENTS = "run.json"  # the options a run was started with, for --resume
_ENUM_OPTIONS = {
    "split": SplitName,
    "fallback": FallbackName,
    "rules": RuleChoice,
    "scoring": ScoringName,
    "dtype": DtypeName,
}


def save_run_arguments(out: Path, arguments: dict[str, Any]) -> None:
    from rueval.report.results import write_json

    plain = {k: v.value if isinstance(v, Enum) else str(v) if isinstance(v, Path) else v for k, v in arguments.items()}
    write_json(out / RUN_ARGUMENTS, {**plain, "out": str(out)})


def load_run_arguments(out: Path) -> dict[str, Any]:
    from rueval.report.results import read_json

    saved = out / RUN_ARGUMENTS
    if not saved.exists():
        raise RuevalError(f"{saved}: not found; --resume continues a run started with rueval run -o {out}")
    arguments = read_json(saved)
    arguments.setdefault("rules", RuleChoice.all.value)  # runs started before --rules existed ran every rule
    for name, kind in _ENUM_OPTIONS.items():
        if arguments.get(name) is not None:
            arguments[name] = kind(arguments[name])
    return {**arguments, "out": Path(arguments["out"])}


@app.command()
@user_errors
def run(
    tasks: TasksOption = "all",
    model: ModelOption = "majority",
    data: DataOption = None,
    split: Annotated[
        Optional[SplitName], typer.Option(help="Split to score. Default: test when it is labelled, else val.")
    ] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output directory. Default: runs/<model>.")] = None,
    seed: SeedOption = 0,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Score only the first N records of each task.")] = None,
    fallback: FallbackOption = FallbackName.majority,
    rules: RulesOption = RuleChoice.fitted,
    slices: Annotated[
        Optional[str], typer.Option(help="Score per TAPE subpopulation: all, or comma-separated slice names.")
    ] = None,
    shots: Annotated[str, typer.Option(help="LMs: numbers of few-shot demonstrations, e.g. 0,1,4,8.")] = "0",
    episodes: Annotated[int, typer.Option(min=1, help="LMs: demonstration sets per k > 0 (TAPE uses 5).")] = 1,
    scoring: Annotated[
        ScoringName, typer.Option(help="LMs: loglik (continuation log-likelihood) or ppl (TAPE's perplexity).")
    ] = ScoringName.loglik,
    device: Annotated[str, typer.Option(help="hf: torch device, e.g. cpu, cuda, cuda:1.")] = "cpu",
    dtype: Annotated[DtypeName, typer.Option(help="hf: weights dtype.")] = DtypeName.auto,
    batch_size: Annotated[str, typer.Option(help="hf: rows per forward pass, or auto.")] = "auto",
    trust_remote_code: Annotated[bool, typer.Option(help="hf: run code shipped with the model.")] = False,
    base_url: BaseUrlOption = None,
    concurrency: Annotated[int, typer.Option(min=1, help="openai: requests in flight.")] = 8,
    perturb: Annotated[
        Optional[str],
        typer.Option(help="Also score perturbed examples and attack success rates: all, or NAME[:RATE],..."),
    ] = None,
    filter_model: FilterModelOption = None,
    filter_threshold: FilterThresholdOption = None,
    filter_min_share: FilterMinShareOption = 0.0,
    translation_model: TranslationModelOption = None,
    addsent_model: AddsentModelOption = None,
    resume: Annotated[
        bool, typer.Option(help="Continue the interrupted run in OUT (-o) with the options it was started with.")
    ] = False,
) -> None:
    """Score a model on tasks; write OUT/results.json and OUT/predictions/<task>.jsonl.

    Rerunning into the same OUT resumes: finished tasks and computed LM requests are reused."""
    arguments = {name: value for name, value in locals().items() if name != "resume"}  # the options only
    from rueval.evaluate import run as run_tasks
    from rueval.report.table import industrial_text, perturbations_table, results_table, slices_table
    from rueval.slices import resolve_slices

    if resume:
        if out is None:
            raise RuevalError("--resume needs the run's output directory: -o OUT")
        return run(**load_run_arguments(out))
    out = out or Path("runs") / re.sub(r"[^\w.-]+", "_", model)
    robustness = None
    if perturb:
        robustness = robustness_options(
            perturb, seed, filter_model, translation_model, addsent_model, filter_threshold, filter_min_share, base_url
        )
    summary = run_tasks(
        resolve_tasks(tasks),
        model,
        data,
        split.value if split else None,
        out,
        seed,
        limit,
        solver_options=solver_options(
            model,
            fallback,
            rules,
            {
                "scoring": scoring.value,
                "device": device,
                "dtype": dtype.value,
                "batch_size": parse_batch_size(batch_size),
                "trust_remote_code": trust_remote_code,
                "base_url": base_url,
                "concurrency": concurrency,
            },
        ),
        slices=resolve_slices(slices) if slices else (),
        shots=parse_shots(shots),
        episodes=episodes,
        robustness=robustness,
        on_start=lambda: save_run_arguments(out, arguments),
    )
    console.print(results_table(summary))
    if slices:
        console.print(slices_table(summary))
    if robustness:
        console.print(perturbations_table(summary))
    console.print(industrial_text(summary["industrial"]), highlight=False)
    console.print(f"results: {out / 'results.json'}", highlight=False)


@app.command()
@user_errors
def perturb(
    tasks: TasksOption = "tape",
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory: a folder per task.")] = Path("perturbed"),
    perturbations: Annotated[str, typer.Option(help="all, or comma-separated NAME[:RATE].")] = "all",
    seed: SeedOption = 0,
    split: Annotated[
        Optional[SplitName], typer.Option(help="Split to perturb. Default: test when it is labelled, else val.")
    ] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Perturb only the first N records of each task.")] = None,
    filter_model: FilterModelOption = None,
    filter_threshold: FilterThresholdOption = None,
    filter_min_share: FilterMinShareOption = 0.0,
    translation_model: TranslationModelOption = None,
    addsent_model: AddsentModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Write perturbed test sets in TAPE's episodes layout (OUT/<task>/test.jsonl, `perturbation` field)."""
    from rueval.robustness import write_attack_sets

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
) -> None:
    """Predict the RSG test sets and write the leaderboard submission zip."""
    from rueval.submit import submit as write_submission

    written = write_submission(model, data, out, seed, solver_options=solver_options(model, fallback, rules))
    console.print(f"wrote {out}: " + ", ".join(f"{name} ({n} lines)" for name, n in written.items()), highlight=False)


@app.command()
@user_errors
def heuristics(
    task: Annotated[str, typer.Option("--task", "-t", help="The task whose heuristic rules to measure.")],
    data: DataOption = None,
    split: Annotated[
        Optional[SplitName],
        typer.Option(help="Labelled split to measure. Default: test when it is labelled, else val."),
    ] = None,
) -> None:
    """Per heuristic rule: how many examples it covers, and how many of those it gets right."""
    from rueval.data import open_data
    from rueval.evaluate import eval_split
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
    from rueval.report.compare import compare_runs
    from rueval.report.results import write_json
    from rueval.report.table import compare_table

    comparison = compare_runs(run_a, run_b, resamples=resamples, seed=seed)
    console.print(compare_table(comparison))
    if out:
        write_json(out, comparison)
        console.print(f"comparison: {out}", highlight=False)


RunDirsArgument = Annotated[list[Path], typer.Argument(help="Run directories (each with a results.json).")]


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


@app.command()
def version() -> None:
    """Print the rueval version."""
    console.print(__version__)


def main() -> None:
    app()
