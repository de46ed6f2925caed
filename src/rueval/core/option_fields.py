"""An option declared once, as a frozen dataclass's field: its type and default are the field's, its
metadata the rest: the help the command line shows, whether a number depends on it (a run's
fingerprint holds it) or not, the backends that read it, its choices and the command-line options
that set it under another name. The run's JSON, fingerprint, checks and --resume rules read these."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rueval.core.errors import RuevalError

KEY = "rueval.option"


@dataclass(frozen=True)
class Declared:
    """What an option is, beside its field's type and default."""

    help: str  # as the command line shows it (its explicit parameter is checked against it)
    scored: bool = True  # False: no number depends on it; it stays out of the run's fingerprint
    read_by: tuple[str, ...] = ()  # the backends that read it (`hf`, `openai`, ...); () every one
    choices: tuple[str, ...] = ()  # the values it takes, when it is one of a few names
    set_by: tuple[str, ...] = ()  # the options that set it, when not (only) the one of its own name


def option(
    default: Any = dataclasses.MISSING, *, help: str, default_factory: Any = dataclasses.MISSING, **declared: Any
) -> Any:
    """A dataclass field that declares an option (``declared``: Declared's other attributes)."""
    metadata = {KEY: Declared(help, **declared)}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def declarations(cls: Any) -> dict[str, Declared]:
    """The declared options of a dataclass, by field name (a field with no declaration is left out)."""
    return {field.name: field.metadata[KEY] for field in dataclasses.fields(cls) if KEY in field.metadata}


def unscored_fields(cls: Any) -> tuple[str, ...]:
    """The fields of ``cls`` no number depends on."""
    return tuple(name for name, declared in declarations(cls).items() if not declared.scored)


def read_by(cls: Any, backend: str) -> tuple[str, ...]:
    """The fields of ``cls`` the ``backend`` reads: those declared for it or for no backend in
    particular; all of them for a backend no declaration names (one registered from outside)."""
    named = {name for declared in declarations(cls).values() for name in declared.read_by}
    return tuple(
        name
        for name, declared in declarations(cls).items()
        if backend in declared.read_by or not declared.read_by or backend not in named
    )


def check_choices(value: Any) -> None:
    """Each declared option of a dataclass value with choices holds one of them (None: not given)."""
    for name, declared in declarations(type(value)).items():
        given = getattr(value, name)
        if declared.choices and given is not None and given not in declared.choices:
            flag = "--" + name.replace("_", "-")
            raise RuevalError(f"{flag} {given}: expected one of {', '.join(declared.choices)}")


def to_json(value: Any, keys: Mapping[str, str] | None = None, made: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every field of a dataclass as JSON, under its name (or ``keys``' name for it): a value with
    its own ``to_json`` by it, a tuple as a list, and those of ``made`` as made there (their JSON
    needs another field). Derived from the fields, so none can be left out."""
    made = made or {}
    return {
        (keys or {}).get(f.name, f.name): made[f.name] if f.name in made else _json(getattr(value, f.name))
        for f in dataclasses.fields(value)
    }


def _json(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    return list(value) if isinstance(value, tuple) else value
