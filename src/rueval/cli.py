"""The `rueval` command line: one thin function per command."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from rueval import __version__
from rueval.errors import RuevalError
from rueval.tasks import TASKS, resolve_tasks

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


def user_errors(command: Callable) -> Callable:
    """Bad input ends in one line on stderr and exit code 2, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except RuevalError as e:
            errors.print(f"[bold red]error:[/] {e}", highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


TasksOption = Annotated[str, typer.Option("--tasks", "-t", help="Comma-separated task names, or rsg, tape, all.")]
ModelOption = Annotated[str, typer.Option("--model", "-m", help="majority, random or weighted-random.")]
DataOption = Annotated[
    Optional[str],
    typer.Option("--data", help="A directory or zip in the official layout, or 'hf'. Default: the bundled samples."),
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed for every random choice.")]


@app.command()
@user_errors
def tasks() -> None:
    """List the tasks with their labels, metrics and splits."""
    from rueval.report.table import tasks_table

    console.print(tasks_table(TASKS.values()))


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
) -> None:
    """Score a model on tasks; write OUT/results.json and OUT/predictions/<task>.jsonl."""
    from rueval.evaluate import run as run_tasks
    from rueval.report.table import results_table

    out = out or Path("runs") / re.sub(r"[^\w.-]+", "_", model)
    summary = run_tasks(resolve_tasks(tasks), model, data, split.value if split else None, out, seed, limit)
    console.print(results_table(summary))
    console.print(f"results: {out / 'results.json'}", highlight=False)


@app.command()
@user_errors
def submit(
    model: ModelOption = "majority",
    data: DataOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The zip file to write.")] = Path("submission.zip"),
    seed: SeedOption = 0,
) -> None:
    """Predict the RSG test sets and write the leaderboard submission zip."""
    from rueval.submit import submit as write_submission

    written = write_submission(model, data, out, seed)
    console.print(f"wrote {out}: " + ", ".join(f"{name} ({n} lines)" for name, n in written.items()), highlight=False)


@app.command()
def version() -> None:
    """Print the rueval version."""
    console.print(__version__)


def main() -> None:
    app()
