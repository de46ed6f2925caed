"""The solver registry: `-m NAME` -> a Solver."""

from __future__ import annotations

from rueval.errors import RuevalError
from rueval.solvers.base import Solver
from rueval.solvers.trivial import STRATEGIES, TrivialSolver

SOLVER_NAMES = STRATEGIES


def make_solver(name: str, seed: int = 0) -> Solver:
    if name in STRATEGIES:
        return TrivialSolver(name, seed)
    raise RuevalError(f"unknown model '{name}'; expected one of: {', '.join(SOLVER_NAMES)}")


__all__ = ["SOLVER_NAMES", "Solver", "make_solver"]
