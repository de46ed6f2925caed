"""Generation for `hf:`, in one of two modes, recorded in run.json and in the request cache key:

- "batched" (the default): continuous batching, shared prefixes prefilled once
  (rueval.models.backends.batch_generation) and, for the known architectures, held once and read once
  per step for all their rows (rueval.models.backends.cascade_attention). A greedy text may differ from
  the one-prompt-at-a-time text only where the model's top two logits are within float rounding of each
  other (a batch's shape changes the logits in their last bits); docs/benchmarks.md measures how often.
- "one-at-a-time" (``--batch-size 1``, and models the batched mode cannot serve exactly: see
  ``batched_mode_fits``): transformers' own ``generate`` on each prompt alone, so a text never depends on
  the batch size or on the prompts beside it, to the last bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Protocol

from rueval.models.backends.generated_text import answer_text
from rueval.models.backends.harness_tokens import HarnessTokens
from rueval.models.base import Generation, OnDone, check_generation_budget, cut_at_stop, text_of

BATCHED, ONE_AT_A_TIME = "batched", "one-at-a-time"


class HFCausalLM(Protocol):
    """What generation reads of rueval.models.backends.hf.HFCausalLM (which imports this module)."""

    model: Any
    tokenizer: Any
    harness: HarnessTokens | None
    start_token: int
    max_length: int
    device: Any
    pack_tokens: int
    window: int | None
    cascade_attention: bool

    def _tokens(self, text: str) -> list[int]: ...
    def _fitting(self, compute: Callable[[int, int], Any]) -> Any: ...
    def _generation_step(self, input_ids: Any, cache: Any, mask: Any, positions: Any, **attention: Any) -> Any: ...


STOP_MARGIN = 4  # tokens decoded beyond a stop sequence's bytes to find it (a character spans up to 4 bytes)
CPU_CACHE_BYTES = 2 << 30  # the batched key/value cache's share of a CPU machine's memory
GPU_CACHE_SHARE = 0.5  # ... and of a GPU's memory free after loading
# generation_config fields that make transformers' generate change the logits (or stop) beyond what the
# batched loop does: a model that sets one generates one prompt at a time
PROCESSED = (
    "repetition_penalty",
    "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size",
    "bad_words_ids",
    "suppress_tokens",
    "begin_suppress_tokens",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "min_length",
    "min_new_tokens",
    "sequence_bias",
    "exponential_decay_length_penalty",
    "renormalize_logits",
    "epsilon_cutoff",
    "eta_cutoff",
    "typical_p",
    "min_p",
    "watermarking_config",
)


def batched_mode_fits(model: HFCausalLM) -> bool:
    """Whether the batched loop computes what transformers' generate would: the model honours an
    attention mask with holes and explicit positions (its probe passed), sees every past token (no
    sliding window), and its generation config asks for no logits processing."""
    config = model.model.generation_config
    default = type(config)()
    processed = any(getattr(config, name, None) != getattr(default, name, None) for name in PROCESSED)
    return bool(model.pack_tokens) and model.window is None and not processed


def prompt_ids(model: HFCausalLM, request: Generation) -> list[int]:
    """The prompt's token ids as the model reads them: the start token first (or lm-eval's --bos rule),
    the oldest tokens dropped so that the budget fits the model's window."""
    check_generation_budget(request.max_new_tokens, model.max_length)
    if model.harness is not None:
        return model.harness.prompt(request)
    ids = [model.start_token, *model._tokens(text_of(request.prompt))]
    return ids[-(model.max_length - request.max_new_tokens) :]


def generate_one(model: HFCausalLM, request: Generation) -> str:
    """transformers' generate on this prompt alone; a sampled request's token is drawn by RowSampler."""
    from transformers import LogitsProcessorList, StoppingCriteriaList

    from rueval.models.backends.generated_text import GeneratedTextStop
    from rueval.models.backends.sampling import RowSampler

    prompt = prompt_ids(model, request)
    sample = request.temperature > 0 or request.top_p < 1
    stop = [GeneratedTextStop(model.tokenizer, request.stop, len(prompt))] if request.stop else []
    out = greedy_generate(
        model,
        prompt,
        request.max_new_tokens,
        logits_processor=LogitsProcessorList([RowSampler([request], model.device)] if sample else []),
        stopping_criteria=StoppingCriteriaList(stop),
    )
    return cut_at_stop(answer_text(model.tokenizer, out[0, len(prompt) :].tolist()), request.stop)


def greedy_generate(model: HFCausalLM, prompt: list[int], max_new_tokens: int, **options: Any) -> Any:
    """transformers' generate on one prompt, each next token the argmax (a sampled request's draw is a logits
    processor in ``options``), whatever sampling the model's generation config asks for."""
    import torch

    input_ids = torch.tensor([prompt], device=model.device)
    tokenizer = model.tokenizer
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else model.start_token
    with torch.inference_mode():
        return model.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            top_p=None,
            temperature=None,
            top_k=None,
            pad_token_id=pad,
            **options,
        )


def generate_batched(model: HFCausalLM, requests: Sequence[Generation], on_done: OnDone | None) -> list[str]:
    """Every request's text by continuous batching; each finished text reported to ``on_done`` as its
    row leaves. With --batch-size auto, rows and cache shrink on out-of-memory and the unfinished
    requests start again (the finished ones are kept)."""
    import torch

    from rueval.models.backends.batch_generation import BatchGenerator, Budget, Row, new_rows
    from rueval.models.backends.cascade_attention import swapped

    texts: dict[int, str] = {}
    prompts = [prompt_ids(model, request) for request in requests]
    eos = _end_tokens(model)
    tokenizer = model.tokenizer

    def decode(tokens: list[int]) -> str:
        return answer_text(tokenizer, tokens)

    def stopped(rows: list[Row]) -> list[bool]:
        """Whether a stop sequence ends within each row's newest tokens (decoded in one call; the text is
        cut at the first stop later)."""
        if not rows:
            return []
        windows = [row.generated[-(max(len(s.encode()) for s in row.request.stop) + STOP_MARGIN) :] for row in rows]
        tails = tokenizer.batch_decode(windows, skip_special_tokens=True)
        return [any(s and s in tail for s in row.request.stop) for row, tail in zip(rows, tails, strict=True)]

    def finish(row: Row, text: str) -> None:
        texts[row.index] = cut_at_stop(text, row.request.stop)
        if on_done is not None:
            on_done([(row.index, texts[row.index])])

    def compute(rows: int, tokens: int) -> None:
        budget = Budget(rows, tokens, _cache_tokens(model))
        step, cascade = model._generation_step, model.cascade_attention
        generator = BatchGenerator(step, budget, eos, decode, stopped, model.device, cascade)
        waiting = new_rows(requests, prompts, model.device)
        with torch.inference_mode(), swapped(model.model) if cascade else nullcontext():
            generator.run([row for row in waiting if row.index not in texts], finish)

    model._fitting(compute)
    return [texts[i] for i in range(len(requests))]


def _end_tokens(model: HFCausalLM) -> frozenset[int]:
    """The tokens that end a generation, as transformers' generate reads them: the generation config's
    alone (none there: a text runs to its budget or a stop sequence, past the tokenizer's end token)."""
    eos = model.model.generation_config.eos_token_id
    return frozenset([] if eos is None else [eos] if isinstance(eos, int) else eos)


def _cache_tokens(model: HFCausalLM) -> int:
    """How many tokens (rows x columns) the batched key/value cache may hold on the model's device."""
    import torch

    config = model.model.config
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None) or 1
    width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None) or 1
    token_bytes = 2 * layers * width * model.model.dtype.itemsize  # keys and values (an upper bound under GQA)
    if model.device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(model.device)
        return max(1, int(free * GPU_CACHE_SHARE) // token_bytes)
    return max(1, CPU_CACHE_BYTES // token_bytes)
