"""The Python API, for notebooks: `rueval.evaluate(model=..., tasks=[...])` -> the run's typed results.

The same run as `rueval run`, through the same pipeline; files are written only when ``out`` is given.
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rueval.core.errors import RuevalError
from rueval.models.base import LanguageModel
from rueval.results import PredictionRow, RunResult
from rueval.results.run import read_predictions

if TYPE_CHECKING:
    from rueval.run import RunSpec
    from rueval.solvers import Solver


@dataclass
class Evaluation(RunResult):
    """A run's results (scores, intervals, few-shot figures per task) with its per-example predictions."""

    predictions: dict[str, list[PredictionRow]] = field(default_factory=dict)  # task -> one row per example


def evaluate(
    model: str | LanguageModel | Any,
    tasks: str | Sequence[str] = "all",
    shots: int | Sequence[int] | None = None,
    episodes: int = 1,
    data: str | Path | None = None,
    out: str | Path | None = None,
    *,
    tokenizer: Any = None,
    split: str | None = None,
    seed: int = 0,
    limit: float | None = None,
    scoring: str = "loglik",
    prompts: str = "default",
    force: bool = False,
    log_samples: bool = False,
    predict_only: bool = False,
    apply_chat_template: bool = False,
    system_instruction: str | None = None,
    fewshot_as_multiturn: bool = False,
    gen_kwargs: str | Mapping[str, Any] | None = None,
    confirm_run_unsafe_code: bool = False,
    **model_options: Any,
) -> Evaluation:
    """Evaluate ``model`` on ``tasks`` (names, or "rsg", "tape", "all").

    ``model``: a spec as `-m` takes it ("majority", "hf:PATH_OR_HUB_ID", "openai:MODEL"), a loaded
    transformers causal LM with its ``tokenizer``, or any ``rueval.models.base.LanguageModel``.
    ``model_options``: ModelOptions' fields for a spec (device, dtype, batch_size, base_url, ...).
    ``shots``: numbers of demonstrations (language models); None: 0, or on MERA's files MERA's settings.
    ``episodes``: demonstration sets per k > 0 (TAPE uses 5); ``scoring``: "loglik" or "ppl" (TAPE's perplexity).
    ``split``: "val" or "test"; None: test when it is labelled, else val. ``seed``: seeds every random choice.
    ``prompts``: "default", or "all" to score each task under every prompt its paper ran (as --prompts).
    ``data``: a directory or zip in the official layout, MERA's files, "hf", or None for the bundled samples.
    ``predict_only``: predict without scoring (lm-eval's --predict_only); a split without answers always is.
    ``limit``: the first N records of each task, or below 1 that share of them (not the benchmark's scores).
    ``log_samples``: write OUT/samples/samples_<task>_<date id>.jsonl, lm-eval's per-example logs (needs ``out``).
    ``apply_chat_template``, ``system_instruction``, ``fewshot_as_multiturn``, ``gen_kwargs`` (lm-eval's
    "temperature=0,max_gen_toks=64" or a dict of those keys): as the command line's options of those names.
    ``confirm_run_unsafe_code``: run the code a model writes (MERA's ruHumanEval and ruCodeEval) on this machine:
    a subprocess with limits, not a sandbox (as --confirm-run-unsafe-code).
    In-memory models are not cached between calls: their weights may change between them."""
    from rueval.run import run
    from rueval.run.store import run_folder

    if out is not None and not isinstance(out, str | Path) or not isinstance(force, bool):
        raise RuevalError(f"out: expected a folder's path, and force true or false; got {out!r:.40}, {force!r:.40}")
    # the language-model options given: those set to other than their default, and every model option
    lm_options = {"scoring": scoring, "apply_chat_template": apply_chat_template, "gen_kwargs": gen_kwargs}
    lm_options |= {"system_instruction": system_instruction, "fewshot_as_multiturn": fewshot_as_multiturn}
    defaults = inspect.signature(evaluate).parameters
    given = {name: value for name, value in lm_options.items() if value != defaults[name].default} | model_options
    values: dict[str, Any] = {"data": data, "split": split, "seed": seed, "limit": limit, "shots": shots}
    values["episodes"] = episodes
    values |= {"prompts": prompts, "log_samples": log_samples}
    values["confirm_run_unsafe_code"] = confirm_run_unsafe_code
    spec, solver = _spec(model, tokenizer, tasks, given, {**values, "predict_only": predict_only})
    if spec.log_samples and out is None:  # written to a temporary folder, they would be lost
        raise RuevalError("log_samples: the sample logs are written to OUT/samples/; give out= a folder")
    with tempfile.TemporaryDirectory(prefix="rueval-") as scratch:
        run_dir = Path(out) if out is not None else Path(scratch)
        summary = run(spec, run_dir, force, solver)
        folder = run_folder(run_dir)  # out=FILE.json, lm-eval's form: the run's files are in FILE
        predictions = {
            task.name: read_predictions(task, folder / "predictions" / f"{task.name}.jsonl") for task in spec.task_list
        }
    return Evaluation(**{f.name: getattr(summary, f.name) for f in fields(RunResult)}, predictions=predictions)


def _spec(
    model: Any, tokenizer: Any, tasks: str | Sequence[str], given: dict[str, Any], values: dict[str, Any]
) -> tuple[RunSpec, Solver | None]:
    """The run's spec, and for a model in memory its solver (a spec's the pipeline makes)."""
    from rueval.run import RunSpec

    if isinstance(model, str):
        if tokenizer is not None:
            raise RuevalError(f"model {model!r}: a spec loads its own tokenizer; tokenizer= goes with a loaded model")
        return RunSpec.create(tasks, model, given, **values), None
    from rueval.models.engine import Engine
    from rueval.solvers import lm_solver
    from rueval.solvers.options import LMOptions

    loaded = _language_model(model, tokenizer)
    options = LMOptions.from_given(loaded.identity, given, values["seed"], in_memory=True)
    spec = RunSpec.create(tasks, loaded.identity, options=options, **values)
    assert isinstance(spec.options, LMOptions)  # as given, or with MERA's settings on MERA's files
    return spec, lm_solver(Engine(loaded), spec.model, spec.options, spec.seed)


def _language_model(model: Any, tokenizer: Any) -> LanguageModel:
    """A LanguageModel as it is, or a transformers model with its tokenizer behind one."""
    if isinstance(model, LanguageModel):
        return model
    if tokenizer is None:
        raise RuevalError(
            "model: expected a spec, a LanguageModel, or a transformers model with tokenizer=, "
            f"got {type(model).__name__}"
        )
    from rueval.models.backends.hf import HFCausalLM  # torch and transformers load only for LMs

    return HFCausalLM.from_loaded(model, tokenizer)
