"""The typer application the commands register on."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Evaluate Russian language models on RussianSuperGLUE and TAPE.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
