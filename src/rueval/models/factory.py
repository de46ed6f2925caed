"""The one place that opens a language model: a spec (`hf:PATH_OR_HUB_ID`, `openai:MODEL`,
`openai-chat:MODEL`, `vllm:PATH_OR_HUB_ID`, ...) and one options object -> a backend, behind an engine
with the request cache.

A spec may carry its backend's own keys after the target, lm-eval's ``--model_args`` form:
``vllm:DIR,tensor_parallel_size=2,max_model_len=4096`` or ``openai:NAME,tokenizer=DIR``. Each backend
declares the keys it takes (``Backend.keys``); any other is refused.

Backends are registered in BACKENDS by name: a new backend is one module with an ``open_model(spec,
options)`` function that returns its LanguageModel, plus one line here (or one ``BACKENDS[name] = ...``
from outside). The module is imported only when a model of its backend is opened.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import asdict, dataclass

from rueval.core.errors import RuevalError
from rueval.core.option_fields import check_choices, option
from rueval.models.base import LanguageModel
from rueval.models.engine import Engine

DTYPES = ("auto", "float32", "bfloat16", "float16")
CACHE_MODES = ("on", "off", "refresh")
DEVICE_MAPS = ("auto",)
LOAD_IN = ("8bit", "4bit")
# where sequences' start tokens come from (models/backends/harness_tokens.py): always hf:'s; the others lm-eval
# HFLM's, with its add_bos_token unset (the tokenizer's own special tokens), True or False
BOS_POLICIES = ("always", "tokenizer", "true", "false")
CHAT_SCORINGS = ("auto", "logprobs", "generate")  # openai-chat: how options are scored
SERVED = ("openai", "openai-chat")  # the backends of a model served over HTTP
# vllm.LLM's engine settings a vllm: spec may carry (tensor and data parallel, memory, window)
VLLM_ENGINE_KEYS = ("tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization", "max_model_len")


@dataclass(frozen=True)
class Backend:
    """Where a backend lives: ``module`` defines ``open_model(spec: ModelSpec, options: ModelOptions) ->
    LanguageModel``; ``target`` says what follows the colon (for help texts); ``renders_chat``: its
    server renders every prompt as chat turns with the model's own template (so a run records the
    chat template as applied, and --chat-scoring is its option)."""

    module: str
    target: str = "MODEL"
    example: str = "Qwen/Qwen2.5-7B-Instruct (the name the server lists at /v1/models)"  # for errors
    keys: tuple[str, ...] = ()  # the spec keys it takes (``-m BACKEND:TARGET,KEY=VALUE``)
    renders_chat: bool = False

    def open(self, spec: ModelSpec, options: ModelOptions) -> LanguageModel:
        return importlib.import_module(self.module).open_model(spec, options)


BACKENDS: dict[str, Backend] = {
    "hf": Backend("rueval.models.backends.hf", "PATH_OR_HUB_ID", "ai-forever/rugpt3small_based_on_gpt2"),
    "openai": Backend("rueval.models.backends.openai", keys=("tokenizer",)),
    "openai-chat": Backend("rueval.models.backends.openai_chat", renders_chat=True),
    "vllm": Backend(
        "rueval.models.backends.vllm",
        "PATH_OR_HUB_ID",
        "ai-forever/rugpt3small_based_on_gpt2",
        keys=("tokenizer", *VLLM_ENGINE_KEYS),
    ),
}


@dataclass(frozen=True)
class ModelSpec:
    """`-m BACKEND:TARGET[,KEY=VALUE...]`, parsed once, its backend one of BACKENDS and its keys ones the
    backend declares."""

    backend: str
    target: str
    keys: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, spec: str) -> ModelSpec:
        backend, _, rest = spec.partition(":")
        if backend not in BACKENDS:
            raise RuevalError(f"-m {spec}: unknown backend '{backend}'; expected one of: {', '.join(BACKENDS)}")
        target, *pairs = rest.split(",")
        if not target:
            raise RuevalError(f"-m {spec}: name the model after the colon, e.g. {backend}:{BACKENDS[backend].example}")
        keys = []
        for pair in filter(None, (p.strip() for p in pairs)):
            key, equals, value = pair.partition("=")
            if not equals or key not in BACKENDS[backend].keys:
                taken = ", ".join(BACKENDS[backend].keys) or "none"
                raise RuevalError(f"-m {spec}: {pair}: expected KEY=VALUE, the keys {backend}: takes: {taken}")
            keys.append((key, value))
        return cls(backend, target, tuple(keys))

    @staticmethod
    def is_lm(spec: str) -> bool:
        return spec.partition(":")[0] in BACKENDS

    def key(self, name: str) -> str | None:
        """The value of a spec key, None when not given."""
        return dict(self.keys).get(name)

    @property
    def renders_chat(self) -> bool:
        return BACKENDS[self.backend].renders_chat

    def __str__(self) -> str:
        return ",".join([f"{self.backend}:{self.target}", *(f"{k}={v}" for k, v in self.keys)])


@dataclass(frozen=True)
class ModelOptions:
    """How to run a language model, each option declared with the backends that read it (one a backend
    does not read stays out of its runs' fingerprints); every field is JSON."""

    device: str = option(
        "cpu", help="hf: torch device, e.g. cpu, cuda, cuda:1. Default: cuda when there is a GPU.", read_by=("hf",)
    )
    dtype: str = option("auto", help="hf: weights dtype.", read_by=("hf", "vllm"), choices=DTYPES)
    batch_size: int | str = option("auto", help="hf: rows per forward pass, or auto.", read_by=("hf",))
    trust_remote_code: bool = option(False, help="hf: run code shipped with the model.", read_by=("hf", "vllm"))
    bos: str = option(
        "always",
        help="hf: start tokens: always BOS (else EOS), TAPE's; or as lm-eval's HFLM: tokenizer (default), true, false.",
        read_by=("hf",),
        choices=BOS_POLICIES,
    )
    # serving and caching
    base_url: str | None = option(
        None,
        help="openai: models (-m, --addsent-model): the server, e.g. http://localhost:8000/v1; "
        "several comma-separated, or @FILE with one URL a line.",
        read_by=SERVED,
    )
    # how requests are fetched, not what they return: unscored
    concurrency: int = option(8, help="openai: HTTP requests in flight per server.", scored=False, read_by=SERVED)
    # models/backends/token_ids.py: auto, server, text, or a path or hub id
    tokenizer: str = option(
        "auto",
        help="openai: where prompts' token ids come from: the served model's tokenizer (a path or hub id); auto: "
        "the server's own if it can be had, else text prompts, with a warning; server: the server's own or an "
        "error; text: text prompts, tokenized by the server (scores may differ from hf:'s).",
        read_by=("openai", "vllm"),
    )
    timeout: float = option(
        300.0,
        help="openai: seconds one HTTP request may take, retries included, before the run stops.",
        scored=False,
        read_by=SERVED,
    )
    cache: str = option(
        "on",
        help="LMs: the on-disk request cache; refresh computes every request again and overwrites.",
        scored=False,
        choices=CACHE_MODES,
    )
    chat_scoring: str = option(
        "auto",
        help="openai-chat: score options by prompt logprobs, or generate and match the answer; auto: ask.",
        read_by=("openai-chat",),
    )
    # large models on GPUs (hf)
    revision: str | None = option(None, help="hf: a hub branch, tag or commit.", read_by=("hf", "vllm"))
    device_map: str | None = option(
        None,
        help="hf: auto spreads the weights over the GPUs (accelerate); --device is then unused.",
        read_by=("hf",),
        choices=DEVICE_MAPS,
    )
    peft: str | None = option(
        None,
        help="hf: a PEFT adapter directory to merge into the weights (pip install 'rueval[peft]').",
        read_by=("hf",),
    )
    load_in: str | None = option(
        None,
        help="hf: quantize the weights on a CUDA GPU (pip install 'rueval[quantize]').",
        read_by=("hf",),
        choices=LOAD_IN,
    )

    def to_json(self) -> dict:
        return asdict(self)

    def check(self) -> None:
        """Every value one of its choices, whichever backend reads it."""
        check_choices(self)
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
            raise RuevalError(f"--timeout {timeout}: expected a positive number of seconds")
        if self.revision is not None and not self.revision.strip():
            raise RuevalError(f"--revision {self.revision!r}: expected a hub branch, tag or commit")
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise RuevalError(f"--concurrency {self.concurrency}: expected a whole number from 1")


def open_engine(spec: str | ModelSpec, options: ModelOptions = ModelOptions()) -> Engine:
    """The backend for ``spec`` behind an engine (with the on-disk request cache unless turned off)."""
    spec = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    options.check()
    if options.tokenizer != "auto" and "tokenizer" not in BACKENDS[spec.backend].keys:
        takers = ", ".join(f"{name}:" for name, backend in BACKENDS.items() if "tokenizer" in backend.keys)
        raise RuevalError(f"--tokenizer is for {takers} models; {spec} uses its own")
    if options.bos != "always" and spec.backend != "hf":
        raise RuevalError(f"--bos {options.bos}: only hf: models tokenize as lm-eval's HFLM, not {spec.backend}:")
    model = BACKENDS[spec.backend].open(spec, options)
    requests = None
    if options.cache != "off":
        from rueval.core.paths import cache_dir
        from rueval.models.cache import RequestCache

        requests = RequestCache(cache_dir("requests") / "requests.sqlite", refresh=options.cache == "refresh")
    return Engine(model, requests)
