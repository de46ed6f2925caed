"""The Python API, for notebooks: `rueval.evaluate(model=..., tasks=[...])` -> the run's typed results.

The same run as `rueval run`, through the same pipeline; files are written only when ``out`` is given.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from rueval.errors import RuevalError
from rueval.models.base import LanguageModel
from rueval.results import PredictionRow, RunResult
from rueval.results.run import read_predictions
from rueval.tasks import resolve_tasks

LM_OPTIONS = ("apply_chat_template", "system_instruction", "fewshot_as_multiturn", "gen_kwargs")


@dataclass
class Evaluation(RunResult):
    """A run's results (scores, intervals, few-shot figures per task) with its per-example predictions."""

    predictions: dict[str, list[PredictionRow]] = field(default_factory=dict)  # task -> one row per example


def evaluate(
    model: str | LanguageModel | Any,
    tasks: str | Sequence[str] = "all",
    shots: int | Sequence[int] = 0,
    episodes: int = 1,
    data: str | Path | None = None,
    out: str | Path | None = None,
    *,
    tokenizer: Any = None,
    split: str | None = None,
    seed: int = 0,
    limit: float | None = None,
    scoring: str = "loglik",
    force: bool = False,
    log_samples: bool = False,
    apply_chat_template: bool = False,
    system_instruction: str | None = None,
    fewshot_as_multiturn: bool = False,
    gen_kwargs: str | Mapping[str, Any] | None = None,
    **model_options: Any,
) -> Evaluation:
    """Evaluate ``model`` on ``tasks`` (names, or "rsg", "tape", "all").

    ``model``: a spec as `-m` takes it ("majority", "hf:PATH_OR_HUB_ID", "openai:MODEL"), a loaded
    transformers causal LM with its ``tokenizer``, or any ``rueval.models.base.LanguageModel``.
    ``model_options``: ModelOptions' fields for a spec (device, dtype, batch_size, base_url, ...).
    ``data``: a directory or zip in the official layout, "hf", or None for the bundled samples.
    ``limit``: the first N records of each task, or below 1 that share of them (not the benchmark's scores).
    ``log_samples``: write OUT/samples/<task>.jsonl (lm-eval's per-example logs; needs ``out``).
    ``apply_chat_template``, ``system_instruction``, ``fewshot_as_multiturn``, ``gen_kwargs`` (lm-eval's
    "temperature=0,max_gen_toks=64" or a dict of those keys): as the command line's options of those names.
    In-memory models are not cached between calls: their weights may change between them."""
    from rueval.run import run

    task_list = resolve_tasks(tasks if isinstance(tasks, str) else ",".join(tasks))
    shot_list = [shots] if isinstance(shots, int) else list(shots)
    chat = {"apply_chat_template": apply_chat_template, "system_instruction": system_instruction}
    chat["fewshot_as_multiturn"] = fewshot_as_multiturn
    lm_options = _lm_options(chat, gen_kwargs)
    name, solver, solver_options = _solver(model, tokenizer, scoring, seed, {**model_options, **lm_options})
    with tempfile.TemporaryDirectory(prefix="rueval-") as scratch:
        run_dir = Path(out) if out is not None else Path(scratch)
        summary = run(
            task_list,
            name,
            run_dir,
            str(data) if data is not None else None,
            split,
            seed,
            limit,
            solver_options=solver_options,
            shots=shot_list,
            episodes=episodes,
            force=force,
            solver=solver,
            log_samples=log_samples,
        )
        predictions = {
            task.name: read_predictions(task, run_dir / "predictions" / f"{task.name}.jsonl") for task in task_list
        }
    return Evaluation(**{f.name: getattr(summary, f.name) for f in fields(RunResult)}, predictions=predictions)


def _lm_options(chat: dict[str, Any], gen_kwargs: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The chat and generation options given (those not given stay out: runs keep their fingerprints)."""
    given = {name: value for name, value in chat.items() if value}
    if gen_kwargs:
        from rueval.solvers.lm import GenerationSettings

        parse = GenerationSettings.parse if isinstance(gen_kwargs, str) else GenerationSettings.from_mapping
        given["gen_kwargs"] = parse(gen_kwargs).describe()
    return given


def _solver(model: Any, tokenizer: Any, scoring: str, seed: int, model_options: dict[str, Any]):
    """(the name results give the model, a solver made here or None for the pipeline to make, its options).
    ``model_options``: ModelOptions' fields and the chat and generation options."""
    if isinstance(model, str):
        from rueval.models.factory import ModelSpec

        if tokenizer is not None:
            raise RuevalError(f"model {model!r}: a spec loads its own tokenizer; tokenizer= goes with a loaded model")
        if ModelSpec.is_lm(model):
            return model, None, {"scoring": scoring, **model_options}
        if model_options:
            raise RuevalError(
                f"model {model!r} takes no model options; {', '.join(model_options)} are for language models"
            )
        return model, None, {}
    lm_options = {name: model_options.pop(name) for name in LM_OPTIONS if name in model_options}
    if model_options:
        raise RuevalError(f"{', '.join(model_options)}: options for a model spec; an in-memory model is used as it is")
    if not isinstance(model, LanguageModel):
        if tokenizer is None:
            raise RuevalError(
                "model: expected a spec, a LanguageModel, or a transformers model with tokenizer=, "
                f"got {type(model).__name__}"
            )
        from rueval.models.hf import HFCausalLM  # torch and transformers load only for LMs

        model = HFCausalLM.from_loaded(model, tokenizer)
    from rueval.models.engine import Engine
    from rueval.solvers.lm import ChatFormat, GenerationSettings, LMSolver

    name = model.identity
    chat = ChatFormat(
        lm_options.get("apply_chat_template", False),
        lm_options.get("system_instruction"),
        lm_options.get("fewshot_as_multiturn", False),
    )
    generation = GenerationSettings.from_mapping(lm_options.get("gen_kwargs", {}))
    return name, LMSolver(Engine(model), name, scoring, seed, chat, generation), {"scoring": scoring, **lm_options}
