"""`rueval contamination`: the membership audit of a language model against tasks' items (audit/contamination.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rueval.cli.app import app
from rueval.cli.groups import GroupValues, flag, grouped
from rueval.cli.option_types import (
    SOLVER_OPTIONS,
    DataOption,
    ModelOption,
    QuietOption,
    SeedOption,
    SplitOption,
    VerboseOption,
    console,
    user_errors,
)
from rueval.cli.task_file_options import IncludePathOption, RunTasksOption, TrustTaskCodeOption
from rueval.core.errors import RuevalError
from rueval.core.progress import set_level
from rueval.tasks import resolve_tasks

TextOption = Annotated[
    str,
    typer.Option(
        "--text",
        help="What is scored of an item: fields (its record's string fields joined in order, as a dataset dump "
        "and a training corpus hold it) or prompt (the zero-shot prompt the task builds from it).",
    ),
]


@app.command()
@user_errors
@grouped
def contamination(
    model: ModelOption,
    tasks: RunTasksOption = "all",
    data: DataOption = None,
    split: SplitOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for contamination.json and contamination/.")] = Path(
        "contamination"
    ),
    text: TextOption = "fields",
    reference_split: Annotated[
        str | None,
        typer.Option(help="A split known to be unseen by the model, as the reference. Default: perturbed twins."),
    ] = None,
    members: Annotated[
        Path | None, typer.Option(help="A file of item ids known to be in training (one a line): AUROC per score.")
    ] = None,
    run: Annotated[
        Path | None,
        typer.Option(
            help="A run directory of this model: its scores on the items no test flags, beside its full scores."
        ),
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option(
            help="A training corpus (a file or folder of text, JSON Lines or Parquet files): each item's 13-gram "
            "overlap with it, as lm-eval's decontamination computes it (ngram_overlap)."
        ),
    ] = None,
    corpus_field: Annotated[
        list[str] | None,
        typer.Option(help="A text field of the corpus's JSON Lines and Parquet records (repeatable). Default: text."),
    ] = None,
    guessing: Annotated[
        bool,
        typer.Option(
            "--guessing",
            help="TS-Guessing: hide a wrong option of each labelled item of a choice task and ask the model to "
            "write it; its exact-match rate against chance.",
        ),
    ] = False,
    include_path: IncludePathOption = None,
    trust_task_code: TrustTaskCodeOption = False,
    k: Annotated[float, typer.Option(min=0.01, max=1.0, help="Min-K% and Min-K%++: the share of tokens.")] = 0.2,
    seed: SeedOption = 0,
    solver: GroupValues = SOLVER_OPTIONS,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Has this model seen the tasks' items? Min-K%, Min-K%++, zlib ratio, perplexity and perturbation scores
    per item, each score tested against reference items, and with --corpus the items' 13-gram overlap with a
    training corpus; of rueval's tasks or lm-eval's task files (their evaluation documents, the corpus searched
    by their decontamination queries); writes OUT/contamination.json and OUT/contamination/<task>.jsonl
    (docs/contamination.md)."""
    set_level(quiet, verbose)
    from rueval.audit.contamination import AuditSettings, audit_contamination, check_task_file_options, read_members
    from rueval.models.factory import ModelSpec, open_engine
    from rueval.report.contamination import contamination_table
    from rueval.run.spec import RunSpec
    from rueval.solvers import LANGUAGE_MODEL, family_of, solver_options
    from rueval.solvers.options import LMOptions
    from rueval.tasks.lm_eval_tasks import task_file_names

    if family_of(model) is not LANGUAGE_MODEL:
        raise RuevalError(f"-m {model}: the contamination audit needs a language model (BACKEND:TARGET, e.g. hf:PATH)")
    options = solver_options(model, solver.given, seed, spell=flag)
    assert isinstance(options, LMOptions) and options.engine is not None  # a spec's language model
    settings = AuditSettings(
        split=split.value if split else None,
        reference_split=reference_split,
        text=text,
        k=k,
        seed=seed,
        members=frozenset(read_members(members)) if members else None,
        run=run,
        corpus=corpus,
        corpus_fields=tuple(corpus_field or ("text",)),
        guessing=guessing,
        include_path=RunSpec.include_folders(include_path or ()),
        trust_task_code=trust_task_code,
    )
    asked = [name.strip() for name in tasks.split(",") if name.strip()]
    task_files = task_file_names(asked, settings.include_path)
    own = [name for name in asked if name not in task_files]
    chosen = resolve_tasks(",".join(own)) if own or not task_files else []
    check_task_file_options(settings, task_files)
    engine = open_engine(ModelSpec.parse(model), options.engine)
    result = audit_contamination(engine, chosen, data, out, settings, task_files)
    console.print(contamination_table(result))
    console.print(f"contamination: {out / 'contamination.json'}", highlight=False)
