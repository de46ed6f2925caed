"""The commands that evaluate: run, perturb, submit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from rueval.cli.app import app
from rueval.cli.options import (
    AddsentModelOption,
    ApplyChatTemplateOption,
    BaseUrlOption,
    BatchSizeOption,
    CacheMode,
    CacheOption,
    ChatScoringName,
    ChatScoringOption,
    ConcurrencyOption,
    DataOption,
    DeviceMapOption,
    DeviceOption,
    DtypeName,
    DtypeOption,
    EpisodesOption,
    FallbackName,
    FallbackOption,
    FewshotAsMultiturnOption,
    FilterMinShareOption,
    FilterModelOption,
    FilterThresholdOption,
    FtAccumulationOption,
    FtBatchSizeOption,
    FtEpochsOption,
    FtHeldoutOption,
    FtLrOption,
    FtMaxLengthOption,
    FtPrecisionOption,
    FtSaveOption,
    FtSeedOption,
    GenKwargsOption,
    IncludePathOption,
    LimitOption,
    LoadInOption,
    LogSamplesOption,
    MaxLineOption,
    ModelArgsOption,
    ModelOption,
    NumFewshotOption,
    PeftOption,
    QuietOption,
    RevisionOption,
    RuleChoice,
    RulesOption,
    RunLimitOption,
    ScoringName,
    ScoringOption,
    SeedOption,
    ShotsOption,
    SplitOption,
    SystemInstructionOption,
    TapeSetName,
    TapeSetOption,
    TasksOption,
    TranslationModelOption,
    TrustRemoteCodeOption,
    VerboseOption,
    console,
    errors,
    from_plain,
    lm_eval_model,
    parse_shots,
    plain,
    solver_options,
    user_errors,
)
from rueval.errors import RuevalError
from rueval.progress import set_level, warn
from rueval.tasks import resolve_tasks
from rueval.tasks.include import include

INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C
RUN_ONLY = ("resume", "out", "force", "quiet", "verbose")


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
    include_path: IncludePathOption = None,
    split: SplitOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", "--output_path", help="Output directory. Default: runs/<model>.")
    ] = None,
    seed: SeedOption = 0,
    limit: RunLimitOption = None,
    model_args: ModelArgsOption = None,
    num_fewshot: NumFewshotOption = None,
    fallback: FallbackOption = FallbackName.majority,
    rules: RulesOption = RuleChoice.fitted,
    slices: Annotated[
        str | None, typer.Option(help="Score per TAPE subpopulation: all, or comma-separated slice names.")
    ] = None,
    shots: ShotsOption = "0",
    episodes: EpisodesOption = 1,
    scoring: ScoringOption = ScoringName.loglik,
    device: DeviceOption = None,
    dtype: DtypeOption = DtypeName.auto,
    batch_size: BatchSizeOption = "auto",
    trust_remote_code: TrustRemoteCodeOption = False,
    revision: RevisionOption = None,
    device_map: DeviceMapOption = None,
    peft: PeftOption = None,
    load_in: LoadInOption = None,
    cache: CacheOption = CacheMode.on,
    base_url: BaseUrlOption = None,
    concurrency: ConcurrencyOption = 8,
    chat_scoring: ChatScoringOption = ChatScoringName.auto,
    apply_chat_template: ApplyChatTemplateOption = False,
    system_instruction: SystemInstructionOption = None,
    fewshot_as_multiturn: FewshotAsMultiturnOption = False,
    log_samples: LogSamplesOption = False,
    gen_kwargs: GenKwargsOption = None,
    perturb: Annotated[
        str | None,
        typer.Option(help="Also score perturbed examples and attack success rates: all, or NAME[:RATE],..."),
    ] = None,
    filter_model: FilterModelOption = None,
    filter_threshold: FilterThresholdOption = None,
    filter_min_share: FilterMinShareOption = 0.0,
    translation_model: TranslationModelOption = None,
    addsent_model: AddsentModelOption = None,
    ft_epochs: FtEpochsOption = 10.0,
    ft_lr: FtLrOption = 1e-5,
    ft_batch_size: FtBatchSizeOption = 4,
    ft_max_length: FtMaxLengthOption = 256,
    ft_seed: FtSeedOption = None,
    ft_grad_accum: FtAccumulationOption = 1,
    ft_precision: FtPrecisionOption = "fp32",
    ft_heldout: FtHeldoutOption = 0.1,
    ft_save: FtSaveOption = None,
    tape_set: TapeSetOption = TapeSetName.episodes,
    max_line_mb: MaxLineOption = 20.0,
    force: Annotated[
        bool, typer.Option(help="Replace another run's results in OUT (by default the run stops before any work).")
    ] = False,
    resume: Annotated[
        bool, typer.Option(help="Continue the interrupted run in OUT (-o) with the options it was started with.")
    ] = False,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Score a model on tasks; write OUT/results.json and OUT/predictions/<task>.jsonl.

    Rerunning into the same OUT resumes: finished tasks and computed LM requests are reused."""
    # saved for --resume: what the run scores, not how this call runs and shows it
    options = {name: value for name, value in locals().items() if name not in RUN_ONLY}
    set_level(quiet, verbose)
    if resume:
        if out is None:
            raise RuevalError("--resume needs the run's output directory: -o OUT")
        return run(**load_run_arguments(out), out=out, quiet=quiet, verbose=verbose)
    include(*include_path or ())
    from rueval.run.pipeline import check_limit

    options["limit"] = limit = check_limit(limit)
    if data is not None and data != "hf" and Path(data).exists():
        options["data"] = data = str(Path(data).resolve())  # saved absolute: --resume works from anywhere
    model, from_model_args = lm_eval_model(model, model_args)  # lm-eval's form; run.json keeps the options as given
    if num_fewshot is not None:
        shots = str(num_fewshot)
    if limit is not None:
        warn(f"--limit {limit} scores part of each split: these are not the benchmark's scores")
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
            solver_options=solver_options(model, plain({**options, **from_model_args})),
            slices=resolve_slices(slices) if slices else (),
            shots=parse_shots(shots),
            episodes=episodes,
            robustness=robustness,
            options=plain(options),
            force=force,
            log_samples=log_samples,
            max_line_bytes=int(max_line_mb * 2**20),
            tape_set=tape_set.value,
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
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Write perturbed test sets in TAPE's episodes layout (OUT/<task>/test.jsonl, `perturbation` field)."""
    from rueval.run.robustness import write_attack_sets

    set_level(quiet, verbose)
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
    device: DeviceOption = None,
    dtype: DtypeOption = DtypeName.auto,
    batch_size: BatchSizeOption = "auto",
    trust_remote_code: TrustRemoteCodeOption = False,
    revision: RevisionOption = None,
    device_map: DeviceMapOption = None,
    peft: PeftOption = None,
    load_in: LoadInOption = None,
    cache: CacheOption = CacheMode.on,
    base_url: BaseUrlOption = None,
    concurrency: ConcurrencyOption = 8,
    ft_epochs: FtEpochsOption = 10.0,
    ft_lr: FtLrOption = 1e-5,
    ft_batch_size: FtBatchSizeOption = 4,
    ft_max_length: FtMaxLengthOption = 256,
    ft_seed: FtSeedOption = None,
    ft_grad_accum: FtAccumulationOption = 1,
    ft_precision: FtPrecisionOption = "fp32",
    ft_heldout: FtHeldoutOption = 0.1,
    ft_save: FtSaveOption = None,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Predict the RSG test sets and write the leaderboard submission zip."""
    from rueval.submit import submit as write_submission

    set_level(quiet, verbose)
    options = plain({name: value for name, value in locals().items() if name not in ("out", "data", "seed", "shots")})
    written = write_submission(model, data, out, seed, solver_options(model, options), shots)
    console.print(f"wrote {out}: " + ", ".join(f"{name} ({n} lines)" for name, n in written.items()), highlight=False)
