"""The checks of a run's values, done once, on its spec: each field of the type it is declared with,
then in its range; a value that fails is one line naming the option (`rueval.evaluate` names its
arguments as the command line does: ``seed`` is ``--seed``). Values a spec reads back from run.json
are checked alike, naming the file."""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.results.checks import Checker
from rueval.scoring.stats import check_seed

# Each episode asks every request of its k again: a thousand is far beyond any paper's protocol (TAPE: 5)
# and keeps a mistyped number from planning billions of requests.
EPISODES_MAX = 1000
TYPED_ELSEWHERE = ("options", "robustness", "mera")  # typed objects, checked by their own classes


def flag(name: str) -> str:
    """A spec field as the command line spells its option."""
    return "--" + name.replace("_", "-")


def check_types(spec: Any) -> None:
    """Every field of ``spec`` (a dataclass) of its declared type: the API takes any value."""
    hints = typing.get_type_hints(type(spec))
    check = Checker("")
    for field in dataclasses.fields(spec):
        if field.name in TYPED_ELSEWHERE:
            continue
        try:
            check.typed(hints[field.name], getattr(spec, field.name), field.name)
        except DataError as e:
            raise RuevalError(f"{flag(field.name)}: {e.message}") from None


def check_ranges(seed: int, shots: tuple[int, ...], episodes: int) -> None:
    check_seed(seed)
    if not shots or any(k < 0 for k in shots):
        raise RuevalError(f"--shots {','.join(map(str, shots))}: expected one or more non-negative numbers")
    if not 1 <= episodes <= EPISODES_MAX:
        raise RuevalError(f"--episodes {episodes}: expected a whole number from 1 to {EPISODES_MAX}")


def check_limit(limit: Any) -> int | float | None:
    """--limit as lm-eval reads it: a whole number of records, or a share of them between 0 and 1."""
    if limit is None:
        return None
    number = isinstance(limit, int | float) and not isinstance(limit, bool) and math.isfinite(limit)
    if number and 0 < limit < 1:
        return float(limit)
    if not number or limit < 1 or limit != int(limit):
        raise RuevalError(f"--limit {limit}: expected a whole number of records, or a share between 0 and 1")
    return int(limit)
