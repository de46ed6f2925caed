"""rueval's engine as an lm-evaluation-harness model: ``lm_eval.simple_evaluate(model=RuevalLM(...), tasks=...)``,
or ``simple_evaluate(model="rueval", model_args="model=hf:DIR,bos=tokenizer,batch_size=1")`` once this module
is imported. Requests go through the engine (dedup, the request cache, shared prefixes) to any rueval backend;
lm-eval's own code builds the requests and scores the answers.

Needs the lm-eval extra (``pip install 'rueval[lm-eval]'``); nothing else in rueval imports this module.

- ``loglikelihood``: (log-probability, greedy) of each (context, continuation), as ``Loglikelihood``.
- ``loglikelihood_rolling``: the log-probability of each whole text after the prefix token (a rolling
  ``Loglikelihood``). A text longer than the model's window is refused (hf:) rather than scored in lm-eval's
  rolling windows; an empty text has nothing to predict and scores 0, as lm-eval's windows give it where the
  tokenizer adds no BOS.
- ``generate_until``: gen_kwargs ``until`` (a text or a list; the EOS text is added as HFLM adds it),
  ``max_gen_toks`` (or its aliases; default 256 as HFLM's), ``do_sample``, ``temperature``, ``top_p`` and
  ``seed`` as rueval's ``Generation``; any other key is refused.

The start tokens are the backend's: lm-eval's ``--model hf`` tokenization is ``bos=tokenizer`` (hf:'s default,
``always``, is TAPE's protocol). Chat templates (``apply_chat_template``) are refused for now.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from rueval.core.errors import RuevalError
from rueval.models.base import Generation, Loglikelihood
from rueval.models.engine import Engine
from rueval.models.factory import BACKENDS, ModelOptions, ModelSpec, open_engine

MAX_GEN_TOKS = 256  # HFLM's default
# lm-eval's names for the number of new tokens, the first given wins (lm_eval.models.utils.normalize_gen_kwargs)
NEW_TOKENS = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")
SAMPLING = ("do_sample", "temperature", "top_p", "seed")
OPTION_TYPES = typing.get_type_hints(ModelOptions)


@register_model("rueval")
class RuevalLM(LM):
    """An lm-eval ``LM`` answering with a rueval ``Engine``."""

    def __init__(self, engine: Engine):
        super().__init__()
        self.engine = engine
        tokenizer = engine.model.capabilities.tokenizer
        eos = getattr(tokenizer, "eos_token_id", None)
        self.eos_text = None if eos is None else tokenizer.decode(eos, skip_special_tokens=False)

    @classmethod
    def from_spec(cls, spec: str | ModelSpec, **options: Any) -> RuevalLM:
        """A model spec (``hf:DIR``, ``vllm:DIR,tensor_parallel_size=2``, ``openai:NAME``) opened with
        ModelOptions' options by name, as rueval opens it (with the request cache unless ``cache="off"``)."""
        return cls(open_engine(spec, ModelOptions(**options)))

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None) -> RuevalLM:
        """``model=SPEC,KEY=VALUE,...``: rueval's model spec, its backend's spec keys and ModelOptions' options."""
        pairs = [part.partition("=") for part in arg_string.split(",") if part.strip()]
        if any(not equals for _, equals, _ in pairs):
            raise RuevalError(f"--model_args {arg_string}: expected KEY=VALUE,... with model=BACKEND:TARGET")
        return cls.create_from_arg_obj({key.strip(): value for key, _, value in pairs}, additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: Mapping[str, Any], additional_config: dict | None = None) -> RuevalLM:
        args = {**arg_dict, **{k: v for k, v in (additional_config or {}).items() if v is not None}}
        if "model" not in args:
            raise RuevalError("rueval's lm-eval model: name the model with model=BACKEND:TARGET, e.g. model=hf:DIR")
        spec = ModelSpec.parse(str(args.pop("model")))
        own_keys = [key for key in BACKENDS[spec.backend].keys if key not in OPTION_TYPES]  # tokenizer: an option
        spec_keys = [(key, str(args.pop(key))) for key in list(args) if key in own_keys]
        unknown = [key for key in args if key not in OPTION_TYPES]
        if unknown:
            taken = ", ".join(["model", *OPTION_TYPES, *BACKENDS[spec.backend].keys])
            raise RuevalError(f"rueval's lm-eval model: unknown {', '.join(unknown)}; it takes: {taken}")
        spec = ModelSpec(spec.backend, spec.target, (*spec.keys, *spec_keys))
        return cls.from_spec(spec, **{key: _option(key, value) for key, value in args.items()})

    def loglikelihood(self, requests: list) -> list[tuple[float, bool]]:
        pairs = [request.args for request in requests]
        results = self.engine.loglikelihood([Loglikelihood(*pair) for pair in pairs], "lm-eval loglikelihood")
        answers = [(result.logprob, result.greedy) for result in results]
        for pair, answer in zip(pairs, answers, strict=True):
            self.cache_hook.add_partial("loglikelihood", pair, answer)
        return answers

    def loglikelihood_rolling(self, requests: list) -> list[float]:
        texts = [request.args[0] for request in requests]
        asked = [text for text in texts if text]
        results = self.engine.loglikelihood(
            [Loglikelihood("", text, rolling=True) for text in asked], "lm-eval rolling"
        )
        scored = dict(zip(asked, results, strict=True))
        answers = [scored[text].logprob if text else 0.0 for text in texts]
        for text, answer in zip(texts, answers, strict=True):
            self.cache_hook.add_partial("loglikelihood_rolling", (text,), answer)
        return answers

    def generate_until(self, requests: list) -> list[str]:
        asked = [self.generation(context, gen_kwargs) for context, gen_kwargs in (r.args for r in requests)]
        texts = self.engine.generate(asked, "lm-eval generate_until")
        for request, text in zip(requests, texts, strict=True):
            self.cache_hook.add_partial("generate_until", request.args, text)
        return texts

    def generation(self, context: str, gen_kwargs: Mapping[str, Any]) -> Generation:
        """An lm-eval generation request as rueval's: stop texts with the EOS text, new tokens, sampling."""
        kwargs = dict(gen_kwargs)
        unknown = [key for key in kwargs if key not in ("until", *NEW_TOKENS, *SAMPLING)]
        if unknown:
            raise RuevalError(
                f"gen_kwargs {', '.join(unknown)}: rueval's lm-eval model takes until, max_gen_toks, "
                "do_sample, temperature, top_p, seed"
            )
        until = kwargs.get("until") or []
        until = [until] if isinstance(until, str) else until
        if not isinstance(until, list) or not all(isinstance(text, str) for text in until):
            raise RuevalError(f"gen_kwargs until={until!r:.60}: expected a text or a list of texts")
        if self.eos_text is not None and self.eos_text not in until:
            until = [*until, self.eos_text]
        new_tokens = next((kwargs[key] for key in NEW_TOKENS if kwargs.get(key) is not None), MAX_GEN_TOKS)
        temperature = float(kwargs.get("temperature") or 0.0)
        sample = kwargs.get("do_sample")
        sample = temperature > 0 if sample is None else bool(sample)
        top_p = float(kwargs.get("top_p") or 1.0)
        return Generation(
            context,
            int(new_tokens),
            tuple(text for text in until if text),
            top_p=top_p if sample else 1.0,
            temperature=(temperature or 1.0) if sample else 0.0,  # do_sample at temperature 0: transformers' 1
            seed=int(kwargs.get("seed") or 0),
        )

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        raise RuevalError("rueval's lm-eval model does not apply chat templates yet: run without apply_chat_template")

    def get_model_info(self) -> dict[str, Any]:
        """What lm-eval's results record of the model: rueval's identity of it (path or hub id and revision)."""
        return {"rueval_model": self.engine.model.identity}


def _option(name: str, value: Any) -> Any:
    """A --model_args value (text) as ModelOptions' field ``name`` takes it."""
    if not isinstance(value, str):
        return value
    kind = OPTION_TYPES[name]
    try:
        if kind is bool:
            if value.lower() not in ("true", "false"):
                raise ValueError
            return value.lower() == "true"
        if kind in (int, float):
            return kind(value)
    except ValueError:
        raise RuevalError(f"rueval's lm-eval model: {name}={value}: expected a {kind.__name__}") from None
    return int(value) if name == "batch_size" and value.isdigit() else value
