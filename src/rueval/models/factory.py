"""The one place that opens a language model: a spec (`hf:PATH_OR_HUB_ID`, `openai:MODEL`,
`openai-chat:MODEL`) and one options object -> a backend, behind an engine with the request cache."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rueval.errors import RuevalError
from rueval.models.distributed import world
from rueval.models.engine import Engine
from rueval.progress import step

BACKENDS = ("hf", "openai", "openai-chat")
DTYPES = ("auto", "float32", "bfloat16", "float16")
CACHE_MODES = ("on", "off", "refresh")
DEVICE_MAPS = ("auto",)
LOAD_IN = ("8bit", "4bit")


@dataclass(frozen=True)
class ModelSpec:
    """`-m BACKEND:TARGET`, parsed once."""

    backend: str
    target: str

    @classmethod
    def parse(cls, spec: str) -> ModelSpec:
        backend, _, target = spec.partition(":")
        if backend not in BACKENDS:
            raise RuevalError(f"-m {spec}: unknown backend '{backend}'; expected one of: {', '.join(BACKENDS)}")
        if not target:
            raise RuevalError(
                f"-m {spec}: name the model after the colon, e.g. hf:ai-forever/rugpt3small_based_on_gpt2"
            )
        return cls(backend, target)

    @staticmethod
    def is_lm(spec: str) -> bool:
        return spec.partition(":")[0] in BACKENDS

    def __str__(self) -> str:
        return f"{self.backend}:{self.target}"


@dataclass(frozen=True)
class ModelOptions:
    """How to run a language model; every field is JSON, so the options can go into a run's fingerprint."""

    device: str = "cpu"  # hf: a torch device
    dtype: str = "auto"  # hf: weights dtype, one of DTYPES
    batch_size: int | str = "auto"  # hf: rows per forward pass
    trust_remote_code: bool = False  # hf: run code shipped with the model
    # serving and caching
    base_url: str | None = None  # openai: the server, several comma-separated, or @FILE of them
    concurrency: int = 8  # openai: HTTP requests in flight per server
    cache: str = "on"  # the on-disk request cache: on, off, or refresh (compute again and overwrite)
    chat_scoring: str = "auto"  # openai-chat: options by prompt logprobs, by a generated answer, or auto (probe)
    # large models on GPUs (hf)
    revision: str | None = None  # a hub branch, tag or commit
    device_map: str | None = None  # auto: spread the weights over the GPUs (accelerate)
    peft: str | None = None  # a PEFT adapter directory, merged into the weights
    load_in: str | None = None  # 8bit or 4bit (bitsandbytes, a CUDA GPU)

    def to_json(self) -> dict:
        return asdict(self)


def open_engine(spec: str | ModelSpec, options: ModelOptions = ModelOptions()) -> Engine:
    """The backend for ``spec`` behind an engine (with the on-disk request cache unless turned off)."""
    spec = spec if isinstance(spec, ModelSpec) else ModelSpec.parse(spec)
    if options.dtype not in DTYPES:
        raise RuevalError(f"--dtype {options.dtype}: expected one of {', '.join(DTYPES)}")
    for flag, value, allowed in (
        ("--device-map", options.device_map, DEVICE_MAPS),
        ("--load-in", options.load_in, LOAD_IN),
    ):
        if value is not None and value not in allowed:
            raise RuevalError(f"{flag} {value}: expected one of {', '.join(allowed)}")
    if options.cache not in CACHE_MODES:
        raise RuevalError(f"--cache {options.cache}: expected one of {', '.join(CACHE_MODES)}")
    if spec.backend == "hf":
        from rueval.models.hf import HFCausalLM  # torch and transformers load only for LMs

        device = _device(options)
        with step(f"loading {spec} on {options.device_map or device} ({options.dtype})") as loading:
            model = HFCausalLM(
                spec.target,
                device=device,
                dtype=options.dtype,
                batch_size=options.batch_size,
                trust_remote_code=options.trust_remote_code,
                revision=options.revision,
                device_map=options.device_map,
                peft=options.peft,
                load_in=options.load_in,
            )
            loading.outcome = f"{model.parameters() / 1e6:.1f}M parameters"
    elif not options.base_url:
        raise RuevalError(f"-m {spec} needs --base-url, e.g. http://localhost:8000/v1")
    elif spec.backend == "openai":
        from rueval.models.openai import OpenAICompletionsModel

        model = OpenAICompletionsModel(spec.target, options.base_url, concurrency=options.concurrency)
    else:
        from rueval.models.openai_chat import OpenAIChatModel

        model = OpenAIChatModel(
            spec.target, options.base_url, scoring=options.chat_scoring, concurrency=options.concurrency
        )
    requests = None
    if options.cache != "off":
        from rueval.models.cache import RequestCache
        from rueval.paths import cache_dir

        requests = RequestCache(cache_dir("requests") / "requests.sqlite", refresh=options.cache == "refresh")
    return Engine(model, requests)


def _device(options: ModelOptions) -> str:
    """The asked device; under accelerate launch, each process's own (cuda:0, cuda:1, ... or cpu)."""
    launch = world()
    if launch is None:
        return options.device
    if options.device_map is not None:
        raise RuevalError(
            "--device-map auto spreads one model over the GPUs; under accelerate launch each process holds "
            "its own copy on its own device: leave out one or the other"
        )
    return launch.device
