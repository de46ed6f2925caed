"""The options of `rueval run` for lm-evaluation-harness task files (rueval.run.task_files): the names it
takes and the folders they come from; and the consents to run code from elsewhere (a task folder's Python, the
code a model writes) that task files and MERA's code tasks need."""

from __future__ import annotations

from typing import Annotated

import typer

RunTasksOption = Annotated[
    str,
    typer.Option(
        "--tasks",
        "-t",
        help="Comma-separated task names, or rsg, tape, mera, all; or lm-eval's task, group or tag names.",
    ),
]
IncludePathOption = Annotated[
    list[str] | None,
    typer.Option(
        "--include-path",
        "--include_path",
        help="lm-eval task files under this folder, run by lm-eval's own task code (the lm-eval extra); repeatable.",
    ),
]
TrustTaskCodeOption = Annotated[
    bool,
    typer.Option(
        "--trust-task-code",
        help="Run the Python that task files name (!function: process_docs, process_results, metrics).",
    ),
]
ConfirmRunUnsafeCodeOption = Annotated[
    bool,
    typer.Option(
        "--confirm-run-unsafe-code",
        "--confirm_run_unsafe_code",
        help="Run the code a model writes (MERA's ruHumanEval and ruCodeEval, task files marked unsafe_code) on "
        "this machine: a subprocess with limits, not a sandbox.",
    ),
]
