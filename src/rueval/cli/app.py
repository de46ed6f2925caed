"""The typer application the commands register on."""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer._click import exceptions as usage  # typer's own click, whose errors its parser raises
from typer.core import TyperGroup


class OneLineErrors(TyperGroup):
    """A value the command line cannot take (an unknown option, a word where a number goes) is one line
    on stderr and exit code 2, as rueval's own errors are, not click's usage box."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except usage.NoArgsIsHelpError as e:  # `rueval` alone: the help, as it asks
            e.show()
            sys.exit(e.exit_code)
        except usage.UsageError as e:
            command = f"{e.ctx.command_path} --help" if e.ctx is not None else "--help"
            print(f"error: {e.format_message()} (see {command})", file=sys.stderr)
            sys.exit(2)
        except usage.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except typer.Abort:
            print("Aborted!", file=sys.stderr)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)  # a command's Exit(code) comes back as its code


app = typer.Typer(
    cls=OneLineErrors,
    help="Evaluate Russian language models on RussianSuperGLUE and TAPE.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
