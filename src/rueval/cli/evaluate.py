"""The commands that evaluate: run, perturb, submit. Each turns its options into a RunSpec, hands it
to the run layer and prints what came back."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rueval.cli.app import app
from rueval.cli.groups import GroupValues, flag, grouped
from rueval.cli.lm_eval_args import lm_eval_model
from rueval.cli.option_types import (
    READ_LIMITS,
    ROBUSTNESS_OPTIONS,
    SOLVER_OPTIONS,
    BaseUrlOption,
    ConfirmUnsafeCodeOption,
    DataOption,
    EpisodesOption,
    ForceOption,
    IncludePathOption,
    LimitOption,
    LogSamplesOption,
    ModelOption,
    NumFewshotOption,
    PerturbOption,
    PredictOnlyOption,
    PromptsName,
    PromptsOption,
    QuietOption,
    ResumeOption,
    RunLimitOption,
    RunOutOption,
    SeedOption,
    ShotsOption,
    SlicesOption,
    SplitOption,
    TapeSetName,
    TapeSetOption,
    TasksOption,
    VerboseOption,
    console,
    errors,
    parse_shots,
    read_limits,
    user_errors,
)
from rueval.cli.serve import (
    BoardTokenOption,
    BoardUrlOption,
    PublicOption,
    SubmissionNameOption,
    board_client,
    upload_and_wait,
)
from rueval.core.errors import RuevalError
from rueval.core.progress import set_level, warn
from rueval.tasks import TAPE

if TYPE_CHECKING:
    from rueval.results import RunResult
    from rueval.run.robustness_options import RobustnessOptions
    from rueval.run.spec import RunSpec

INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C


def robustness_options(perturbations: str, options: GroupValues, base_url: str | None) -> RobustnessOptions:
    """--perturb (or perturb's --perturbations) with the filter's and models' options; ``base_url``
    serves an `openai:` AddSent model."""
    from rueval.run.robustness_options import RobustnessOptions

    return RobustnessOptions.parse(perturbations, **options.values, base_url=base_url)


def print_notes(notes: list[str]) -> None:
    for note in notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)


@app.command()
@user_errors
@grouped
def run(
    context: typer.Context,
    tasks: TasksOption = "all",
    model: ModelOption = "majority",
    data: DataOption = None,
    include_path: IncludePathOption = None,
    split: SplitOption = None,
    out: RunOutOption = None,
    seed: SeedOption = 0,
    limit: RunLimitOption = None,
    num_fewshot: NumFewshotOption = None,
    slices: SlicesOption = None,
    shots: ShotsOption = None,
    episodes: EpisodesOption = 1,
    prompts: PromptsOption = PromptsName.default,
    solver: GroupValues = SOLVER_OPTIONS,
    log_samples: LogSamplesOption = False,
    predict_only: PredictOnlyOption = False,
    confirm_run_unsafe_code: ConfirmUnsafeCodeOption = False,
    perturb: PerturbOption = None,
    robustness: GroupValues = ROBUSTNESS_OPTIONS,
    tape_set: TapeSetOption = TapeSetName.episodes,
    limits: GroupValues = READ_LIMITS,
    force: ForceOption = False,
    resume: ResumeOption = False,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Score a model on tasks; write OUT/results.json and OUT/predictions/<task>.jsonl.

    Rerunning into the same OUT resumes: finished tasks and computed LM requests are reused."""
    from rueval.run.spec import RunSpec

    set_level(quiet, verbose)

    def asked(
        tasks: str | Sequence[str] = tasks, model: str = model, include_path: Sequence[str] | None = include_path
    ) -> RunSpec:
        """The spec the options ask for (--resume: with the run's model, tasks and include path unless typed)."""
        name, given = lm_eval_model(model, solver.given)  # lm-eval's --model NAME --model_args: rueval's -m
        chosen = None if perturb is None else robustness_options(perturb, robustness, solver.values["base_url"])
        return RunSpec.create(
            tasks, name, given, spell=flag, data=data, include_path=include_path or (),
            split=split.value if split else None, seed=seed, limit=limit, episodes=episodes,
            shots=parse_shots(shots if num_fewshot is None else str(num_fewshot)), prompts=prompts.value,
            slices=slices or (), log_samples=log_samples, predict_only=predict_only, robustness=chosen,
            confirm_run_unsafe_code=confirm_run_unsafe_code,
            tape_set=tape_set.value, **read_limits(limits),
        )  # fmt: skip

    if not resume:
        spec = asked()
    elif out is None:
        raise RuevalError("--resume needs the run's output directory: -o OUT")
    else:
        from rueval.run.resume import resumed

        spec = resumed(out, [name for name in context.params if name not in RUN_ONLY and _typed(context, name)], asked)
    run_and_show(spec, out, force)


RUN_ONLY = ("out", "resume", "force", "quiet", "verbose")  # how this call runs and shows, not what it scores


def _typed(context: typer.Context, name: str) -> bool:
    """Whether the option was given (on the command line or in the environment), not left at its default."""
    source = context.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def run_and_show(spec: RunSpec, out: Path | None, force: bool) -> None:
    """Say what the spec leaves out, run it into OUT (by default runs/<model>) and print its results."""
    if spec.limit is not None:
        warn(f"--limit {spec.limit} scores part of each split: these are not the benchmark's scores")
    if spec.robustness:
        print_notes(spec.robustness.notes())
    out = out or Path("runs") / re.sub(r"[^\w.-]+", "_", spec.model)
    show_run(run_or_stop(spec, out, force), spec, out)


def run_or_stop(spec: RunSpec, out: Path, force: bool) -> RunResult:
    """The run's results; Ctrl-C keeps the finished work and says how to continue it."""
    from rueval.run import run as run_spec

    try:
        return run_spec(spec, out, force)
    except KeyboardInterrupt:
        message = f"interrupted: finished work is kept; continue with: rueval run --resume -o {out}"
        errors.print(message, highlight=False, soft_wrap=True)
        raise typer.Exit(INTERRUPTED) from None


def show_run(summary: RunResult, spec: RunSpec, out: Path) -> None:
    from rueval.report.table import industrial_text, perturbations_table, results_table, slices_table

    print_notes(summary.notes)
    console.print(results_table(summary))
    if spec.slices:
        console.print(slices_table(summary))
    if spec.robustness:
        console.print(perturbations_table(summary))
    if summary.industrial:
        console.print(industrial_text(summary.industrial), highlight=False)
    else:
        console.print("industrial: every task was reused; their figures are in OUT/tasks/*.json", highlight=False)
    from rueval.run.store import run_folder

    console.print(f"results: {run_folder(out) / 'results.json'}", highlight=False)


@app.command()
@user_errors
@grouped
def perturb(
    tasks: TasksOption = TAPE.name,
    data: DataOption = None,
    include_path: IncludePathOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory: a folder per task.")] = Path("perturbed"),
    perturbations: Annotated[str, typer.Option(help="all, or comma-separated NAME[:RATE].")] = "all",
    seed: SeedOption = 0,
    split: SplitOption = None,
    limit: LimitOption = None,
    robustness: GroupValues = ROBUSTNESS_OPTIONS,
    base_url: BaseUrlOption = None,
    limits: GroupValues = READ_LIMITS,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Write perturbed test sets in TAPE's episodes layout (OUT/<task>/test.jsonl, `perturbation` field)."""
    from rueval.run.robustness import write_attack_sets
    from rueval.run.spec import RunSpec

    set_level(quiet, verbose)
    chosen = robustness_options(perturbations, robustness, base_url)
    print_notes(chosen.notes())
    split_name = split.value if split else None
    spec = RunSpec.create(
        tasks,
        data=data,
        include_path=include_path or (),
        split=split_name,
        seed=seed,
        limit=limit,
        robustness=chosen,
        **read_limits(limits),
    )
    counts = write_attack_sets(spec, out)
    for task, written in counts.items():
        console.print(f"{task}: " + ", ".join(f"{name} {n}" for name, n in written.items()), highlight=False)
    console.print(f"perturbed sets: {out}", highlight=False)


@app.command()
@user_errors
@grouped
def submit(
    model: ModelOption = "majority",
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The zip file to write.")] = Path("submission.zip"),
    seed: SeedOption = 0,
    shots: Annotated[int, typer.Option(min=0, help="LMs: few-shot demonstrations (episode 0).")] = 0,
    solver: GroupValues = SOLVER_OPTIONS,
    limits: GroupValues = READ_LIMITS,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
    to: BoardUrlOption = None,
    token: BoardTokenOption = None,
    name: SubmissionNameOption = "",
    public: PublicOption = False,
) -> None:
    """Predict the RSG test sets and write the leaderboard submission zip (and with --to, upload it)."""
    from rueval.run.spec import RunSpec
    from rueval.run.submission import write_submission
    from rueval.tasks import RSG

    set_level(quiet, verbose)
    board = board_client(to, token)  # checked before the work; None without --to
    model, given = lm_eval_model(model, solver.given)
    names = ",".join(task.name for task in RSG.tasks)  # its own nine, whatever task joined the benchmark
    spec = RunSpec.create(names, model, given, spell=flag, data=data, seed=seed, shots=shots, **read_limits(limits))
    written = write_submission(spec, out)
    console.print(f"wrote {out}: " + ", ".join(f"{name} ({n} lines)" for name, n in written.items()), highlight=False)
    if board is not None:
        with board:
            upload_and_wait(board, out, name, public)
