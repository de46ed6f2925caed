"""rueval: evaluate Russian language models on RussianSuperGLUE and TAPE."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # `rueval.evaluate` loads the Python API (and with it the run pipeline) only when first used, so
    # `import rueval` stays cheap; imported by name because the API sits above every layer.
    if name in ("evaluate", "Evaluation"):
        return getattr(importlib.import_module("rueval.api"), name)
    raise AttributeError(f"module 'rueval' has no attribute {name!r}")


__all__ = ["Evaluation", "__version__", "evaluate"]
