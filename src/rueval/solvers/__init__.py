"""The solver registry: `-m NAME` -> a Solver."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rueval.errors import RuevalError
from rueval.solvers.base import Solver
from rueval.solvers.trivial import STRATEGIES, TrivialSolver

# name -> factory taking the seed and solver-specific options as keywords
SOLVERS: dict[str, Callable[..., Solver]] = {name: partial(TrivialSolver, name) for name in STRATEGIES}


def _tfidf(**options) -> Solver:
    from rueval.solvers.tfidf import TfidfSolver  # scikit-learn is imported only when asked for

    return TfidfSolver(**options)


SOLVERS["tfidf"] = _tfidf


def _heuristic(seed: int = 0, fallback: str = "majority", rules: str = "fitted") -> Solver:
    from rueval.solvers.heuristics import HeuristicSolver  # razdel and pymorphy3 load only when asked for

    return HeuristicSolver(seed=seed, fallback=fallback, rules=rules)


SOLVERS["heuristic"] = _heuristic


def _finetune(
    encoder: str, seed: int = 0, work_dir: str | None = None, save_dir: str | None = None, **options
) -> Solver:
    from rueval.solvers.finetune import FinetuneOptions, FinetuneSolver  # torch loads only when asked for

    return FinetuneSolver(encoder, FinetuneOptions(**{"seed": seed, **options}), work_dir=work_dir, save_dir=save_dir)


def make_solver(name: str, seed: int = 0, **options) -> Solver:
    """A solver by name; `hf:PATH_OR_HUB_ID` and `openai:MODEL` are language models, `finetune:PATH_OR_HUB_ID`
    an encoder fine-tuned on each task (options: FinetuneOptions' fields, work_dir, save_dir)."""
    if name.startswith("finetune:"):
        return _finetune(name.removeprefix("finetune:"), seed=seed, **options)
    if name.partition(":")[0] in ("hf", "openai"):
        from rueval.solvers.lm import make_lm_solver  # torch and transformers load only for LMs

        return make_lm_solver(name, seed=seed, **options)
    if name not in SOLVERS:
        raise RuevalError(
            f"unknown model '{name}'; expected one of: {', '.join(SOLVERS)}, hf:PATH, openai:MODEL, finetune:PATH"
        )
    return SOLVERS[name](seed=seed, **options)


__all__ = ["SOLVERS", "Solver", "make_solver"]
