"""Writes the command reference (reference/<command>.md) while mkdocs builds, from the command line
itself through mkdocs-gen-files: each page is what `rueval COMMAND --help` says, never a copy."""

from __future__ import annotations

import html
import re

import mkdocs_gen_files
import typer

from rueval.cli import app

ROOT = typer.main.get_command(app)
CONTEXT = typer.Context(ROOT, info_name="rueval")


def escaped(text: str) -> str:
    """Help text as Markdown that shows it verbatim: `code` kept, <, >, &, |, * and _ escaped elsewhere;
    rich markup's escaped brackets (`rueval\\[peft]`, which --help prints as `rueval[peft]`) as brackets."""
    parts = text.replace("\\[", "[").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"([*_\\])", r"\\\1", html.escape(parts[i], quote=False)).replace("|", "&#124;")
    return "`".join(parts)


def spelled(record: str) -> str:
    """'-t, --tasks <str>' -> '`-t`, `--tasks` `<str>`': each spelling its own code span, so a cell can wrap."""
    names, _, metavar = record.partition(" <")
    spellings = ", ".join(f"`{name}`" for name in re.split(r", | / ", names))
    return f"{spellings} `<{metavar}`" if metavar else spellings


def table(heading: str, records: list[tuple[str, str]]) -> list[str]:
    rows = [f"| {spelled(names)} | {escaped(' '.join(help_text.split()))} |" for names, help_text in records]
    return [f"| {heading} | what it does |", "|---|---|", *rows, ""] if rows else []


def page(name: str, command: typer.core.TyperCommand) -> str:
    context = typer.Context(command, info_name=name, parent=CONTEXT)
    records = {"argument": [], "option": []}
    for param in command.get_params(context):
        record = param.get_help_record(context)
        if record is not None and param.name != "help":
            records[param.param_type_name].append(record)
    usage = command.get_usage(context).removeprefix("Usage: ")
    lines = [f"# rueval {name}", "", escaped(command.help or ""), "", "```text", usage, "```", ""]
    lines += table("argument", records["argument"]) + table("option", records["option"])
    lines += ["Every option's default is shown as `[default: ...]`; `rueval " + name + " --help` prints the same."]
    return "\n".join(lines) + "\n"


def index() -> str:
    lines = ["# Command reference", "", "Generated from the command line when the site is built.", ""]
    lines += ["| command | what it does |", "|---|---|"]
    for name, command in ROOT.commands.items():
        lines.append(f"| [`rueval {name}`]({name}.md) | {escaped(command.get_short_help_str(limit=200))} |")
    return "\n".join(lines) + "\n"


def nav_pages(items) -> set[str]:
    """Every page the mkdocs.yml nav lists."""
    pages = set()
    for item in items if isinstance(items, list) else [items]:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages |= nav_pages(value) if isinstance(value, list) else {value}
    return pages


missing = [name for name in ROOT.commands if f"reference/{name}.md" not in nav_pages(mkdocs_gen_files.config["nav"])]
if missing:
    raise SystemExit(f"mkdocs.yml: add the reference page of every command to the nav: {', '.join(missing)}")
with mkdocs_gen_files.open("reference/index.md", "w") as out:
    out.write(index())
for name, command in ROOT.commands.items():
    with mkdocs_gen_files.open(f"reference/{name}.md", "w") as out:
        out.write(page(name, command))
    mkdocs_gen_files.set_edit_path(f"reference/{name}.md", "gen_cli_reference.py")
