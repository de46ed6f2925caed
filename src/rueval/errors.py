"""The documented import path of rueval's errors; they live in rueval.core.errors."""

from rueval.core.errors import DataError, RuevalError

__all__ = ["DataError", "RuevalError"]
