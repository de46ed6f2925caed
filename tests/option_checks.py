"""The check of a command's or a function's explicit options against the options' declarations
(rueval.core.option_fields): names, defaults, help and choices."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Iterable
from enum import Enum
from typing import Any

from rueval.core.option_fields import declarations
from rueval.solvers.finetune.training_options import FinetuneOptions
from rueval.solvers.options import GIVEN_KEYS, FinetuneRun

MEGABYTES = {"max_line_mb", "max_file_mb"}  # the command line's unit for a limit declared in bytes


def declared_options(classes: Iterable[type]) -> dict[str, list[tuple[str, Any, Any]]]:
    """Each name an option is given by -> the declarations it sets: (field, declaration, default)."""
    found: dict[str, list[tuple[str, Any, Any]]] = {}
    for cls in classes:
        for field in dataclasses.fields(cls):
            declared = declarations(cls)[field.name]
            default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
            names = (field.name, *declared.set_by)
            if cls in (FinetuneRun, FinetuneOptions):  # given as --ft-*
                names = tuple(name for name, key in GIVEN_KEYS.items() if key == field.name) or (field.name,)
            for name in names:
                found.setdefault(name, []).append((field.name, declared, default))
    return found


def parameters(function: Any) -> dict[str, tuple[Any, Any, Any]]:
    """A function's parameters: name -> (type, typer's option info or None, default)."""
    found = {}
    for parameter in inspect.signature(function, eval_str=True).parameters.values():
        kind, *info = typing.get_args(parameter.annotation) or (parameter.annotation,)
        found[parameter.name] = (kind, info[0] if info else None, parameter.default)
    return found


def plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def choices_of(kind: Any) -> tuple[str, ...]:
    enums = [t for t in (kind, *typing.get_args(kind)) if isinstance(t, type) and issubclass(t, Enum)]
    return tuple(member.value for member in enums[0]) if enums else ()


def mismatches(
    command: Any,
    options: dict[str, list[tuple[str, Any, Any]]],
    skipped: set[str],
    resolved: set[str] = frozenset(),
    not_options: set[str] = frozenset(),
) -> list[str]:
    """What a command's explicit options say otherwise than their declarations: an option with no
    declaration, another help, default or choices; a declared field no option sets (but those of
    ``not_options``). ``skipped``: parameters that are no declared options; ``resolved``: options whose
    default (None) is resolved when the run is made."""
    given = {name: value for name, value in parameters(command).items() if name not in skipped}
    wrong = [f"{name}: no declaration" for name in given if name not in options]
    for name, (kind, info, default) in given.items():
        for field, declared, declared_default in options.get(name, []):
            if name != field and (field in given or declared.set_by[:1] != (name,)):
                continue  # another way of setting it (--num_fewshot for --shots), or one of several
            expected = declared_default / 2**20 if name in MEGABYTES else declared_default
            if plain(default) != expected and name not in resolved:
                wrong.append(f"{name}: default {plain(default)!r}, declared {expected!r}")
            if info.help != declared.help:
                wrong.append(f"{name}: help {info.help!r}, declared {declared.help!r}")
            if declared.choices and choices_of(kind) != declared.choices:
                wrong.append(f"{name}: choices {choices_of(kind)}, declared {declared.choices}")
    fields = {field for settings in options.values() for field, _, _ in settings}
    set_by_given = {field for name in given for field, _, _ in options.get(name, [])}
    wrong += [f"{field}: declared, no option" for field in fields - set_by_given - not_options]
    return wrong
