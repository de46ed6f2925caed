"""The solver registry, the one place a model name is dispatched on: `-m MODEL` -> its family, the
typed options it takes (rueval.solvers.options) and the factory that makes its solver."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.models.factory import BACKENDS, ModelSpec
from rueval.solvers.base import Setting, Solver
from rueval.solvers.options import FinetuneRun, HeuristicOptions, LMOptions, NoOptions
from rueval.solvers.trivial import STRATEGIES, TrivialSolver

SolverOptions = NoOptions | HeuristicOptions | FinetuneRun | LMOptions
FINETUNE_PREFIX = "finetune:"
SHARED = ("base_url",)  # --base-url also serves --addsent-model, so it goes with any model


@dataclass(frozen=True)
class Family:
    """A kind of solver: the type of its options, and its factory (model, options, seed, work_dir) ->
    Solver; ``work_dir`` keeps what the solver saves between runs (fine-tuning checkpoints)."""

    name: str
    options: type[SolverOptions]
    make: Callable[[str, Any, int, Path | None], Solver]


def _trivial(model: str, options: NoOptions, seed: int, work_dir: Path | None) -> Solver:
    return TrivialSolver(model, seed)


def _tfidf(model: str, options: NoOptions, seed: int, work_dir: Path | None) -> Solver:
    from rueval.solvers.tfidf import TfidfSolver  # scikit-learn is imported only when asked for

    return TfidfSolver(seed=seed, variant="official" if model == "tfidf" else "fields")


def _heuristic(model: str, options: HeuristicOptions, seed: int, work_dir: Path | None) -> Solver:
    from rueval.solvers.heuristics import HeuristicSolver  # razdel and pymorphy3 load only when asked for

    return HeuristicSolver(seed=seed, fallback=options.fallback, rules=options.rules)


def _finetune(model: str, options: FinetuneRun, seed: int, work_dir: Path | None) -> Solver:
    from rueval.solvers.finetune import FinetuneSolver  # torch loads only when asked for

    encoder = model.removeprefix(FINETUNE_PREFIX)
    return FinetuneSolver(encoder, options.training, work_dir=work_dir, save_dir=options.save_dir)


def _language_model(model: str, options: LMOptions, seed: int, work_dir: Path | None) -> Solver:
    from rueval.models.factory import open_engine  # torch and transformers load only for LMs

    if options.engine is None:
        raise RuevalError(f"{model}: the model was given in memory; run a model spec to make it again")
    return lm_solver(open_engine(ModelSpec.parse(model), options.engine), model, options, seed)


def lm_solver(engine: Any, name: str, options: LMOptions, seed: int) -> Solver:
    """The one place a language model's solver is made: a spec's, or an in-memory model's (rueval.evaluate)."""
    from rueval.models.base import check_generation_budget
    from rueval.solvers.lm import LMSolver

    if options.generation.max_gen_toks is not None:  # refused before any work, not when the first text begins
        check_generation_budget(options.generation.max_gen_toks, engine.model.capabilities.max_length)
    return LMSolver(engine, name, options.scoring, seed, options.chat, options.generation)


TRIVIAL = Family("trivial", NoOptions, _trivial)
TFIDF = Family("tfidf", NoOptions, _tfidf)
HEURISTIC = Family("heuristic", HeuristicOptions, _heuristic)
FINETUNE = Family("finetune", FinetuneRun, _finetune)
LANGUAGE_MODEL = Family("lm", LMOptions, _language_model)
FAMILIES: dict[str, Family] = {}  # by name, as run.json records a run's family
NAMED: dict[str, Family] = {}  # -m NAME -> its family; finetune:ENCODER and BACKEND:TARGET go by their prefix


def register(family: Family, *names: str) -> None:
    """Make ``family`` known (run.json names it) and each of ``names`` a `-m` value that makes its solver."""
    FAMILIES[family.name] = family
    NAMED.update(dict.fromkeys(names, family))


register(TRIVIAL, *STRATEGIES)
register(TFIDF, "tfidf", "tfidf-fields")
register(HEURISTIC, "heuristic")
register(FINETUNE)
register(LANGUAGE_MODEL)


def family_of(model: str) -> Family:
    if model in NAMED:
        return NAMED[model]
    if model.startswith(FINETUNE_PREFIX):
        return FINETUNE
    if ModelSpec.is_lm(model):
        ModelSpec.parse(model)  # a malformed spec fails here, before any work
        return LANGUAGE_MODEL
    specs = [f"{name}:{backend.target}" for name, backend in BACKENDS.items()]
    raise RuevalError(f"unknown model '{model}'; expected one of: {', '.join([*NAMED, *specs])}, finetune:ENCODER")


def solver_options(
    model: str, given: Mapping[str, Any], seed: int = 0, spell: Callable[[str], str] = str
) -> SolverOptions:
    """The typed options of ``model``'s family, from the options a user gave by the names the command
    line and rueval.evaluate share; one meant for another family is an error that names it as ``spell``
    writes it (`--gen-kwargs` on the command line, ``gen_kwargs`` in Python)."""
    family = family_of(model)
    stray = [name for name in given if name not in family.options.NAMES and name not in SHARED]
    if stray:
        names = ", ".join(spell(name) for name in stray)
        if family is not LANGUAGE_MODEL and all(name in LMOptions.NAMES for name in stray):
            verb = "is" if len(stray) == 1 else "are"
            raise RuevalError(
                f"{names}: {model} is no language model: it takes no model options; {names} {verb} for language models"
            )
        raise RuevalError(f"{names}: not an option of {model}")
    return family.options.from_given(model, {n: v for n, v in given.items() if n in family.options.NAMES}, seed)


def make_solver(model: str, seed: int = 0, work_dir: Path | None = None, **given: Any) -> Solver:
    """A solver for ``model`` with the options given by their command-line names (fallback, ft_epochs,
    apply_chat_template, cache, ...); ``work_dir`` keeps what it saves between runs (checkpoints)."""
    return family_of(model).make(model, solver_options(model, given, seed), seed, work_dir)


__all__ = [
    "FAMILIES",
    "NAMED",
    "Family",
    "Setting",
    "Solver",
    "SolverOptions",
    "family_of",
    "make_solver",
    "register",
    "solver_options",
]
