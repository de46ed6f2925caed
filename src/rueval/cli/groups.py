"""Options several commands share, declared once: an OptionGroup is a function's parameters (typer
options with their defaults), and a command wrapped by `grouped` shows typer a group's options in the
place of one parameter and receives them as one GroupValues."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any


def flag(name: str) -> str:
    """An option's name as the command line writes it: ft_epochs -> --ft-epochs."""
    return "--" + name.replace("_", "-")


def plain(value: Any) -> Any:
    """An option's value as JSON: an enum by its value, a path as absolute text (--resume works from anywhere)."""
    if isinstance(value, Enum):
        return value.value
    return str(Path(value).resolve()) if isinstance(value, Path) else value


@dataclass(frozen=True)
class GroupValues:
    values: dict[str, Any]  # every option of the group, as JSON values
    given: dict[str, Any]  # those set to other than their default


@dataclass(frozen=True)
class OptionGroup:
    """The options a function declares as its parameters; a command takes them as one parameter whose
    default is the group."""

    parameters: tuple[inspect.Parameter, ...]

    @classmethod
    def of(cls, declaration: Callable[..., None]) -> OptionGroup:
        return cls(tuple(inspect.signature(declaration, eval_str=True).parameters.values()))

    def collect(self, arguments: dict[str, Any]) -> GroupValues:
        """The group's options, taken out of a command's ``arguments``."""
        values = {p.name: arguments.pop(p.name) for p in self.parameters}
        given = {p.name: plain(values[p.name]) for p in self.parameters if values[p.name] != p.default}
        return GroupValues({name: plain(value) for name, value in values.items()}, given)


def grouped(command: Callable[..., None]) -> Callable[..., None]:
    """A command whose OptionGroup parameters typer reads as their options (see OptionGroup)."""
    signature = inspect.signature(command, eval_str=True)
    groups = {p.name: p.default for p in signature.parameters.values() if isinstance(p.default, OptionGroup)}
    parameters = [
        option
        for p in signature.parameters.values()
        for option in (groups[p.name].parameters if p.name in groups else (p,))
    ]

    @functools.wraps(command)
    def wrapper(**arguments: Any) -> None:
        for name, group in groups.items():
            arguments[name] = group.collect(arguments)
        return command(**arguments)

    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper
