"""Each solver family's options as one typed value, read from the options a user gave by the names
the command line and `rueval.evaluate` share (`--fallback` is ``fallback``, `--ft-epochs` is
``ft_epochs``, `--batch-size` is ``batch_size``); an option not given keeps the field's default.
Every value is JSON (run.json, results.json's ``solver_options``, the run's fingerprint)."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Self

from rueval.core.errors import DataError, RuevalError
from rueval.core.option_fields import declarations, option, read_by, unscored_fields
from rueval.models.factory import ModelOptions, ModelSpec
from rueval.results.checks import Checker
from rueval.solvers.lm import SCORINGS, ChatFormat, GenerationSettings
from rueval.solvers.trivial import STRATEGIES

if TYPE_CHECKING:
    from rueval.solvers.finetune.training_options import FinetuneOptions


class PlainOptions:
    """A family's options that are plain fields (each declared: rueval.core.option_fields), given,
    saved and read back by their own names. ``NAMES``: the options a user gives it."""

    NAMES: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def unscored(cls, model: str) -> tuple[str, ...]:
        """The keys of its JSON no number of ``model``'s runs depends on: those declared unscored."""
        return unscored_fields(cls)

    @classmethod
    def from_given(cls, model: str, given: Mapping[str, Any], seed: int) -> Self:
        return cls(**given)

    def to_json(self) -> dict[str, Any]:
        values: dict[str, Any] = asdict(self)  # type: ignore[call-overload]  # every subclass is a dataclass
        return values

    @classmethod
    def from_json(cls, data: Mapping[str, Any], check: Checker, at: str) -> Self:
        return check.fields(cls, data, at)


@dataclass(frozen=True)
class NoOptions(PlainOptions):
    """A family that takes no options: the trivial baselines, TF-IDF."""


RULE_CHOICES = ("fitted", "all")  # -m heuristic: the rules fitted on train, or all of them


@dataclass(frozen=True)
class HeuristicOptions(PlainOptions):
    """-m heuristic: the baseline for examples no rule covers, and which rules (fitted on train, or all)."""

    NAMES: ClassVar[tuple[str, ...]] = ("fallback", "rules")

    fallback: str = option("majority", help="-m heuristic: the baseline for examples no rule covers.")
    rules: str = option(
        "fitted",
        help="-m heuristic: fitted (the rules that beat the fallback on train) or all (every rule of the paper).",
    )

    def __post_init__(self) -> None:
        if self.fallback not in STRATEGIES:
            raise RuevalError(f"unknown fallback '{self.fallback}'; expected one of: {', '.join(STRATEGIES)}")
        if self.rules not in RULE_CHOICES:
            raise RuevalError(f"unknown rule choice '{self.rules}'; expected one of: {', '.join(RULE_CHOICES)}")


# --ft-* -> FinetuneOptions' fields
FINETUNE_NAMES = {
    "ft_epochs": "epochs",
    "ft_lr": "lr",
    "ft_batch_size": "batch_size",
    "ft_max_length": "max_length",
    "ft_seed": "seed",
    "ft_grad_accum": "gradient_accumulation",
    "ft_precision": "precision",
    "ft_heldout": "heldout",
}


# the options given under another name than their key in run.json's solver_options
GIVEN_KEYS = {**FINETUNE_NAMES, "ft_save": "save_dir"}


@dataclass(frozen=True)
class FinetuneRun(PlainOptions):
    """-m finetune:ENCODER: how it is fine-tuned (its training seed the run's unless given), and
    where each task's model is also saved."""

    NAMES: ClassVar[tuple[str, ...]] = (*FINETUNE_NAMES, "ft_save")

    training: FinetuneOptions = option(help="finetune: how the encoder is fine-tuned (--ft-*).")
    save_dir: str | None = option(None, help="finetune: also save each task's model here.", scored=False)

    @classmethod
    def from_given(cls, model: str, given: Mapping[str, Any], seed: int) -> FinetuneRun:
        from rueval.solvers.finetune.training_options import FinetuneOptions  # torch loads only for fine-tuning

        training = {FINETUNE_NAMES[name]: v for name, v in given.items() if name in FINETUNE_NAMES and v is not None}
        return cls(FinetuneOptions(**{"seed": seed, **training}), given.get("ft_save"))

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self.training), "save_dir": self.save_dir}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], check: Checker, at: str) -> FinetuneRun:
        from rueval.solvers.finetune.training_options import FinetuneOptions

        data = check.obj(data, at.rstrip("."))
        training = check.fields(FinetuneOptions, {k: v for k, v in data.items() if k != "save_dir"}, at)
        return cls(training, check.typed(str | None, data.get("save_dir"), f"{at}save_dir"))


@dataclass(frozen=True)
class LMOwnOptions:
    """LMOptions' own options, as run.json writes them beside ModelOptions' (and a model given in memory
    says so)."""

    scoring: str = option(
        "loglik", help="LMs: loglik (continuation log-likelihood) or ppl (TAPE's perplexity).", choices=SCORINGS
    )
    apply_chat_template: bool = option(
        False, help="hf: render prompts through the tokenizer's chat template (lm-eval's option)."
    )
    system_instruction: str | None = option(
        None, help="LMs: a system instruction before every prompt (a system turn with a template)."
    )
    fewshot_as_multiturn: bool = option(
        False, help="hf, with --apply-chat-template: demonstrations as user/assistant turns."
    )
    gen_kwargs: dict[str, Any] = option(  # as JSON; given as lm-eval's text or a mapping
        default_factory=dict,
        help="LMs, generation tasks (lm-eval's form): temperature=0,top_p=...,max_gen_toks=N,until=TEXT,"
        "do_sample=false. Default: TAPE's sampling, top_p 0.8 at temperature 1.",
    )
    in_memory: bool = option(False, help="A model given to rueval.evaluate in memory (not an option).")


OWN_NAMES = tuple(name for name in declarations(LMOwnOptions) if name != "in_memory")
MODEL_NAMES = tuple(f.name for f in fields(ModelOptions))


@dataclass(frozen=True)
class LMOptions:
    """A language model: how options are scored, how prompts reach it (chat format), how open answers
    are generated, and how the model runs (ModelOptions; None for a model given in memory, used as it is)."""

    NAMES: ClassVar[tuple[str, ...]] = (*OWN_NAMES, *MODEL_NAMES)

    scoring: str = "loglik"
    chat: ChatFormat = ChatFormat()
    generation: GenerationSettings = GenerationSettings()
    engine: ModelOptions | None = field(default_factory=ModelOptions)

    def __post_init__(self) -> None:
        if self.scoring not in SCORINGS:
            raise RuevalError(f"--scoring {self.scoring}: expected one of {', '.join(SCORINGS)}")

    @classmethod
    def unscored(cls, model: str) -> tuple[str, ...]:
        """ModelOptions' unscored options, and those ``model``'s backend does not read."""
        read = read_by(ModelOptions, model.partition(":")[0])  # a model in memory's JSON has none of them
        return (*unscored_fields(ModelOptions), *(name for name in MODEL_NAMES if name not in read))

    @classmethod
    def from_given(cls, model: str, given: Mapping[str, Any], seed: int, in_memory: bool = False) -> LMOptions:
        """The options given by name; a model given in memory takes no ModelOptions (it is loaded already)."""
        _check_types(given)
        engine_options = {name: value for name, value in given.items() if name in MODEL_NAMES}
        if in_memory and engine_options:
            raise RuevalError(
                f"{', '.join(engine_options)}: options for a model spec; an in-memory model is used as it is"
            )
        chat_server = not in_memory and ModelSpec.parse(model).renders_chat
        return cls(
            scoring=given.get("scoring", "loglik"),
            # an openai-chat: server renders the turns with the model's template
            chat=ChatFormat(
                bool(given.get("apply_chat_template")) or chat_server,
                given.get("system_instruction"),
                bool(given.get("fewshot_as_multiturn")),
            ),
            generation=_generation(given.get("gen_kwargs")),
            engine=None if in_memory else _engine(model, engine_options, chat_server),
        )

    def to_json(self) -> dict[str, Any]:
        engine = self.engine.to_json() if self.engine is not None else {"in_memory": True}
        chat = {"apply_chat_template": self.chat.template, "system_instruction": self.chat.system}
        chat["fewshot_as_multiturn"] = self.chat.multiturn
        return {"scoring": self.scoring, **engine, **chat, "gen_kwargs": self.generation.describe()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], check: Checker, at: str) -> LMOptions:
        data = check.obj(data, at.rstrip("."))
        flat = check.fields(LMOwnOptions, {k: v for k, v in data.items() if k not in MODEL_NAMES}, at)
        engine = None if flat.in_memory else check.fields(ModelOptions, _pick(data, MODEL_NAMES), at)
        with check.refusals(f"{at}gen_kwargs"):
            generation = GenerationSettings.from_mapping(flat.gen_kwargs)
        with check.refusals(at.rstrip(".")):
            chat = ChatFormat(flat.apply_chat_template, flat.system_instruction, flat.fewshot_as_multiturn)
            return cls(flat.scoring, chat, generation, engine)


# read by their own parsers: lm-eval's key=value text or a mapping, a number or "auto", a path, none for the default
OWN_PARSERS = ("gen_kwargs", "batch_size", "peft", "device")


def _check_types(given: Mapping[str, Any]) -> None:
    """Each option given of its field's type (`rueval.evaluate` takes any value): one line naming it."""
    hints = typing.get_type_hints(LMOwnOptions) | typing.get_type_hints(ModelOptions)
    check = Checker("")
    for name, value in given.items():
        if name in hints and name not in OWN_PARSERS:
            try:
                check.typed(hints[name], value, name)
            except DataError as e:
                raise RuevalError(f"--{name.replace('_', '-')}: {e.message}") from None


def _pick(data: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: data[name] for name in names if name in data}


def _generation(gen_kwargs: str | Mapping[str, Any] | None) -> GenerationSettings:
    """lm-eval's `temperature=0,max_gen_toks=64`, or a mapping of those keys; checked before the model loads."""
    if not gen_kwargs:
        return GenerationSettings()
    if isinstance(gen_kwargs, str):
        return GenerationSettings.parse(gen_kwargs)
    if not isinstance(gen_kwargs, Mapping):
        raise RuevalError(f"--gen_kwargs: expected key=value,... or a mapping of them, got {gen_kwargs!r:.40}")
    return GenerationSettings.from_mapping(gen_kwargs)


def _engine(model: str, given: Mapping[str, Any], chat_server: bool) -> ModelOptions:
    """ModelOptions from the options given: the device as lm-eval chooses it, the batch size checked."""
    options = dict(given)
    if not chat_server and options.get("chat_scoring", "auto") != "auto":
        raise RuevalError(f"--chat-scoring is for openai-chat: models; {model} scores options by log-likelihood")
    options["batch_size"] = parse_batch_size(str(options.get("batch_size", "auto")))
    options["device"] = options.get("device") or default_device()
    if options.get("peft") is not None:
        options["peft"] = str(options["peft"])
    return ModelOptions(**options)


def default_device() -> str:
    """As lm-eval chooses: the GPU when there is one."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def parse_batch_size(text: str) -> int | str:
    if text == "auto" or (text.isdigit() and int(text) > 0):
        return text if text == "auto" else int(text)
    raise RuevalError(f"--batch-size {text}: expected a positive number or auto")
