"""lm-evaluation-harness's `--model NAME --model_args KEY=VALUE,...` as rueval's model spec and options:

    --model hf --model_args pretrained=NAME,dtype=float16          -> -m hf:NAME --dtype float16 --bos tokenizer
    --model hf --model_args pretrained=NAME,add_bos_token=True     -> -m hf:NAME --bos true
    --model vllm --model_args pretrained=NAME,tensor_parallel_size=2 -> -m vllm:NAME,tensor_parallel_size=2
    --model local-completions --model_args model=NAME,base_url=http://host:8000/v1/completions,
        tokenizer=DIR,num_concurrent=8                               -> -m openai:NAME --base-url
                                                                        http://host:8000/v1 --tokenizer DIR
                                                                        --concurrency 8

Each model takes the keys in LM_EVAL_MODELS; any other is a one-line error naming the keys it takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rueval.core.errors import RuevalError
from rueval.models.factory import DTYPES, VLLM_ENGINE_KEYS

SPEC = "spec"  # a key that goes into the model spec (-m BACKEND:NAME,KEY=VALUE)
WEIGHTS = {"dtype": "dtype", "revision": "revision", "trust_remote_code": "trust_remote_code"}
# lm-eval's --model whose start tokens are HFLM's: rueval's --bos unless add_bos_token says otherwise
HARNESS_BOS = {"hf": "tokenizer"}
# lm-eval's --model -> (rueval's backend, the key naming the model, each other key -> rueval's option or SPEC)
LM_EVAL_MODELS: dict[str, tuple[str, str, dict[str, str]]] = {
    "hf": ("hf", "pretrained", {**WEIGHTS, "add_bos_token": "bos"}),
    "vllm": ("vllm", "pretrained", {**WEIGHTS, "tokenizer": SPEC, **dict.fromkeys(VLLM_ENGINE_KEYS, SPEC)}),
    "local-completions": (
        "openai",
        "model",
        {
            "base_url": "base_url",
            "tokenizer": "tokenizer",
            "num_concurrent": "concurrency",
            "tokenized_requests": "tokenized_requests",
            "tokenizer_backend": "tokenizer_backend",
        },
    ),
}


def lm_eval_model(model: str, given: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The model spec, and the solver options ``given`` with --model_args' (which win) in place of it."""
    given = dict(given)
    model_args = given.pop("model_args", None)
    if model_args is None:
        if model in LM_EVAL_MODELS:
            name_key = LM_EVAL_MODELS[model][1]
            raise RuevalError(f"--model {model}: name the model with --model_args {name_key}=... (or -m BACKEND:NAME)")
        return model, given
    if model not in LM_EVAL_MODELS:
        raise RuevalError(
            f"--model_args is lm-eval's form for --model {', '.join(LM_EVAL_MODELS)}, not --model {model}"
        )
    backend, name_key, keys = LM_EVAL_MODELS[model]
    name: str | None = None
    spec_keys: list[str] = []
    options: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in model_args.split(","))):
        key, equals, value = part.partition("=")
        if key == name_key and equals:
            name = value
        elif equals and key in keys:
            spec_keys += [f"{key}={value}"] if keys[key] == SPEC else []
            options |= {} if keys[key] == SPEC else {keys[key]: value}
        else:
            taken = ", ".join([name_key, *keys])
            raise RuevalError(f"--model_args {part}: expected KEY=VALUE with KEY one of: {taken} (--model {model})")
    if name is None:
        raise RuevalError(f"--model_args {model_args}: name the model with {name_key}=...")
    defaults = {"bos": HARNESS_BOS[model]} if model in HARNESS_BOS else {}
    return ",".join([f"{backend}:{name}", *spec_keys]), {**defaults, **given, **_checked(options)}


def _checked(options: dict[str, Any]) -> dict[str, Any]:
    """lm-eval's values as rueval's options."""
    if "dtype" in options and options["dtype"] not in DTYPES:
        raise RuevalError(f"--model_args dtype={options['dtype']}: expected one of {', '.join(DTYPES)}")
    for key in ("trust_remote_code", "tokenized_requests"):
        if key in options:
            if options[key].lower() not in ("true", "false"):
                raise RuevalError(f"--model_args {key}={options[key]}: expected True or False")
            options[key] = options[key].lower() == "true"
    if "bos" in options:  # add_bos_token=True or False: --bos true or false
        if options["bos"].lower() not in ("true", "false"):
            raise RuevalError(f"--model_args add_bos_token={options['bos']}: expected True or False")
        options["bos"] = options["bos"].lower()
    if "base_url" in options:  # lm-eval names the endpoint, rueval the API's root
        options["base_url"] = options["base_url"].rstrip("/").removesuffix("/completions")
    if "concurrency" in options:
        if not options["concurrency"].isdigit() or int(options["concurrency"]) < 1:
            raise RuevalError(f"--model_args num_concurrent={options['concurrency']}: expected a positive number")
        options["concurrency"] = int(options["concurrency"])
    backend = options.pop("tokenizer_backend", None)
    if options.pop("tokenized_requests", True) is False or backend in ("none", "None"):
        options["tokenizer"] = "text"  # the server tokenizes text prompts
    elif backend == "remote":
        options.setdefault("tokenizer", "server")  # lm-eval's RemoteTokenizer: the server's /tokenize
    return options
