"""The solver registry: `-m NAME` -> a Solver."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from rueval.errors import RuevalError
from rueval.models.factory import ModelOptions, ModelSpec
from rueval.solvers.base import Setting, Solver
from rueval.solvers.trivial import STRATEGIES, TrivialSolver

FINETUNE_PREFIX = "finetune:"
# name -> factory taking the seed and solver-specific options as keywords
SOLVERS: dict[str, Callable[..., Solver]] = {name: partial(TrivialSolver, name) for name in STRATEGIES}


def _tfidf(variant: str, **options) -> Solver:
    from rueval.solvers.tfidf import TfidfSolver  # scikit-learn is imported only when asked for

    return TfidfSolver(variant=variant, **options)


SOLVERS["tfidf"] = partial(_tfidf, "official")
SOLVERS["tfidf-fields"] = partial(_tfidf, "fields")


def _heuristic(seed: int = 0, fallback: str = "majority", rules: str = "fitted") -> Solver:
    from rueval.solvers.heuristics import HeuristicSolver  # razdel and pymorphy3 load only when asked for

    return HeuristicSolver(seed=seed, fallback=fallback, rules=rules)


SOLVERS["heuristic"] = _heuristic


def _language_model(
    spec: str,
    seed: int = 0,
    scoring: str = "loglik",
    apply_chat_template: bool = False,
    system_instruction: str | None = None,
    fewshot_as_multiturn: bool = False,
    gen_kwargs: Mapping[str, Any] | None = None,
    **options,
) -> Solver:
    from rueval.models.factory import open_engine  # torch and transformers load only for LMs
    from rueval.solvers.lm import ChatFormat, GenerationSettings, LMSolver

    apply_chat_template = apply_chat_template or spec.startswith("openai-chat:")  # its server renders the turns
    chat = ChatFormat(apply_chat_template, system_instruction, fewshot_as_multiturn)  # checked before loading
    generation = GenerationSettings.from_mapping(gen_kwargs or {})
    engine = open_engine(ModelSpec.parse(spec), ModelOptions(**options))
    return LMSolver(engine, spec, scoring, seed, chat, generation)


def _finetune(
    encoder: str, seed: int = 0, work_dir: str | None = None, save_dir: str | None = None, **options
) -> Solver:
    from rueval.solvers.finetune import FinetuneOptions, FinetuneSolver  # torch loads only when asked for

    return FinetuneSolver(encoder, FinetuneOptions(**{"seed": seed, **options}), work_dir=work_dir, save_dir=save_dir)


def make_solver(name: str, seed: int = 0, **options) -> Solver:
    """A solver by name; `hf:PATH_OR_HUB_ID` and `openai:MODEL` are language models, `finetune:PATH_OR_HUB_ID`
    an encoder fine-tuned on each task (options: FinetuneOptions' fields, work_dir, save_dir)."""
    if name.startswith(FINETUNE_PREFIX):
        return _finetune(name.removeprefix(FINETUNE_PREFIX), seed=seed, **options)
    if ModelSpec.is_lm(name):
        return _language_model(name, seed, **options)
    if name not in SOLVERS:
        raise RuevalError(
            f"unknown model '{name}'; expected one of: {', '.join(SOLVERS)}, hf:PATH, openai:MODEL, finetune:PATH"
        )
    return SOLVERS[name](seed=seed, **options)


__all__ = ["SOLVERS", "Setting", "Solver", "make_solver"]
