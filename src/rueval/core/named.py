"""Objects named as "module:NAME" in declarations, so a lower layer can name what a higher one defines
(a benchmark's papers' rows, its submission writer) and only the layer that uses it imports it."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from rueval.core.errors import RuevalError


def named(reference: str, what: str) -> Any:
    """The object ``reference`` ("package.module:NAME") names; ``what`` it is, for the error."""
    module, _, attribute = reference.partition(":")
    try:
        return getattr(import_module(module), attribute)
    except (ImportError, AttributeError, ValueError) as e:
        raise RuevalError(f"{what} {reference!r} cannot be loaded ({e})") from None
