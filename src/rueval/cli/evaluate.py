"""The commands that evaluate: run, perturb, submit. Each turns its options into a RunSpec, hands it
to the run layer and prints what came back."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rueval.cli.app import app
from rueval.cli.groups import GroupValues, flag, grouped
from rueval.cli.lm_eval_args import lm_eval_model
from rueval.cli.option_types import (
    READ_LIMITS,
    ROBUSTNESS_OPTIONS,
    SOLVER_OPTIONS,
    BaseUrlOption,
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

if TYPE_CHECKING:
    from rueval.results import RunResult
    from rueval.run.spec import RobustnessOptions, RunSpec

INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C


def robustness_options(perturbations: str, options: GroupValues, base_url: str | None) -> RobustnessOptions:
    """--perturb (or perturb's --perturbations) with the filter's and models' options; ``base_url``
    serves an `openai:` AddSent model."""
    from rueval.run.spec import RobustnessOptions

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
    options = {name: value for name, value in locals().items() if name != "context"}
    set_level(quiet, verbose)
    typed = [name for name in context.params if name not in RUN_ONLY and _typed(context, name)]
    spec = resumed_spec(out, options, typed) if resume else spec_of(options)
    run_and_show(spec, out, force)


RUN_ONLY = ("out", "resume", "force", "quiet", "verbose")  # how this call runs and shows, not what it scores


def _typed(context: typer.Context, name: str) -> bool:
    """Whether the option was given (on the command line or in the environment), not left at its default."""
    source = context.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def spec_of(options: dict[str, Any]) -> RunSpec:
    """The spec of `rueval run`'s options (its function's arguments)."""
    from rueval.run.spec import RunSpec

    solver, shots = options["solver"], options["shots"]
    model, given = lm_eval_model(options["model"], solver.given)  # lm-eval's --model NAME --model_args: rueval's -m
    perturb, split = options["perturb"], options["split"]
    base_url = solver.values["base_url"]
    robustness = None if perturb is None else robustness_options(perturb, options["robustness"], base_url)
    return RunSpec.create(
        options["tasks"],
        model,
        given,
        spell=flag,
        data=options["data"],
        include_path=options["include_path"] or (),
        split=split.value if split else None,
        seed=options["seed"],
        limit=options["limit"],
        shots=parse_shots(shots if options["num_fewshot"] is None else str(options["num_fewshot"])),
        episodes=options["episodes"],
        prompts=options["prompts"].value,
        slices=options["slices"] or (),
        log_samples=options["log_samples"],
        predict_only=options["predict_only"],
        robustness=robustness,
        tape_set=options["tape_set"].value,
        **read_limits(options["limits"]),
    )


def resumed_spec(out: Path | None, options: dict[str, Any], typed: list[str]) -> RunSpec:
    """The spec the run in OUT was started with (its run.json). Options typed beside --resume must say
    what it says: those that change no number (--timeout, --log-samples, ...) apply to the rest of the
    run; any other that differs is an error listing the differences."""
    from rueval.run import RunStore
    from rueval.run.spec import RunSpec, scored

    if out is None:
        raise RuevalError("--resume needs the run's output directory: -o OUT")
    stored = RunStore(out).load_spec()
    if not typed:
        return stored
    recorded = stored.to_json()
    # what the options typed ask for, the rest as recorded
    kept = {"model": stored.model, "tasks": ",".join(stored.tasks), "include_path": stored.include_path}
    asked = spec_of({**options, **{name: value for name, value in kept.items() if name not in typed}}).to_json()
    merged = {**recorded, "solver_options": dict(recorded["solver_options"])}
    for name in typed:
        for key in _spec_keys(name):
            where, _, leaf = key.partition(".")
            if leaf:
                merged[where][leaf] = asked[where].get(leaf)
            else:
                merged[key] = asked[key]
    differences = _differences(scored(recorded), scored(merged))
    if differences:
        raise RuevalError(
            f"--resume continues the run in {out} as it was started, and {differences}; "
            "give none of these to continue it, or a new -o for a new run"
        )
    return RunSpec.from_json(merged, str(out / "run.json"))


def _spec_keys(option: str) -> tuple[str, ...]:
    """The keys of a spec's JSON an option of `rueval run` sets (a solver option: one of its family's options)."""
    from rueval.solvers.options import FINETUNE_NAMES

    named = {
        "model": ("model", "family"),
        "num_fewshot": ("shots",),
        "perturb": ("robustness",),
        "max_line_mb": ("max_line_bytes",),
        "max_file_mb": ("max_file_bytes",),
        "model_args": ("model", "family", "solver_options"),  # lm-eval's form names the model and its options
        "ft_save": ("solver_options.save_dir",),
    }  # fmt: skip
    if option in named:
        return named[option]
    if option in SOLVER_OPTIONS.names:
        return (f"solver_options.{FINETUNE_NAMES.get(option, option)}",)
    return ("robustness",) if option in ROBUSTNESS_OPTIONS.names else (option,)


def _differences(recorded: dict[str, Any], asked: dict[str, Any]) -> str:
    """``seed 0 -> 5, tasks ['rcb', 'parus'] -> ['parus']``: what the options typed change."""
    changed = []
    for key in dict.fromkeys([*recorded, *asked]):
        before, after = recorded.get(key), asked.get(key)
        if isinstance(before, dict) and isinstance(after, dict):
            leaves = [leaf for leaf in dict.fromkeys([*before, *after]) if before.get(leaf) != after.get(leaf)]
            changed += [f"{key}.{leaf} {before.get(leaf)!r:.40} -> {after.get(leaf)!r:.40}" for leaf in leaves]
        elif before != after:
            changed.append(f"{key} {before!r:.60} -> {after!r:.60}")
    return "these differ from it: " + ", ".join(changed) if changed else ""


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
    tasks: TasksOption = "tape",
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

    set_level(quiet, verbose)
    board = board_client(to, token)  # checked before the work; None without --to
    model, given = lm_eval_model(model, solver.given)
    spec = RunSpec.create("rsg", model, given, spell=flag, data=data, seed=seed, shots=shots, **read_limits(limits))
    written = write_submission(spec, out)
    console.print(f"wrote {out}: " + ", ".join(f"{name} ({n} lines)" for name, n in written.items()), highlight=False)
    if board is not None:
        with board:
            upload_and_wait(board, out, name, public)
