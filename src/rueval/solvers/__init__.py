"""The solver registry: `-m NAME` -> a Solver."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rueval.errors import RuevalError
from rueval.solvers.base import Solver
from rueval.solvers.trivial import STRATEGIES, TrivialSolver

# name -> factory taking the seed and solver-specific options as keywords
SOLVERS: dict[str, Callable[..., Solver]] = {name: partial(TrivialSolver, name) for name in STRATEGIES}


def make_solver(name: str, seed: int = 0, **options) -> Solver:
    if name not in SOLVERS:
        raise RuevalError(f"unknown model '{name}'; expected one of: {', '.join(SOLVERS)}")
    return SOLVERS[name](seed=seed, **options)


__all__ = ["SOLVERS", "Solver", "make_solver"]
