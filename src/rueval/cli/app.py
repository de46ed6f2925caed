"""The typer application the commands register on."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer._click import Context, HelpFormatter
from typer._click import exceptions as usage  # typer's own click, whose errors its parser raises
from typer.core import TyperGroup


class WholeHelp(TyperGroup):
    """Help in click's layout, which gives a long option name its own line and wraps the help under it, so
    nothing is cut at 80 columns (a pipe, a CI log). Rich's panels shrink every column alike until
    `--include-path,--include_path` loses its end. Each command is listed with its whole summary, the
    first paragraph of its help, where click would cut it at the width."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = [
            (name, inspect.cleandoc(command.help or "").split("\n\n")[0])
            for name in self.list_commands(ctx)
            if (command := self.get_command(ctx, name)) is not None and not command.hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class OneLineErrors(WholeHelp):
    """A value the command line cannot take (an unknown option, a word where a number goes) is one line
    on stderr and exit code 2, as rueval's own errors are, not click's usage box."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        passed = (args, prog_name, complete_var, False, windows_expand_args)  # standalone_mode False: errors come here
        if not standalone_mode:
            return super().main(*passed, **extra)
        try:
            result = super().main(*passed, **extra)
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
    rich_markup_mode=None,  # click's help layout (WholeHelp), which rich markup would not pass through
)
