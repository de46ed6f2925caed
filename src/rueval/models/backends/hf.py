"""Hugging Face transformers causal language models (`-m hf:PATH_OR_HUB_ID`)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.progress import step
from rueval.models.backends.harness_tokens import ADD_BOS, ALWAYS, HarnessTokens, Windows, tokenizer_args
from rueval.models.backends.hf_generation import (
    BATCHED,
    ONE_AT_A_TIME,
    batched_mode_fits,
    generate_batched,
    generate_one,
)
from rueval.models.backends.placement import (
    check_device,
    content_hash,
    hash_while_loading,
    load_weights,
    merged_adapter,
    model_revision,
    require_libraries,
    weights_placement,
)
from rueval.models.backends.token_ids import fit_window, start_token_of
from rueval.models.base import (
    Capabilities,
    Generation,
    LanguageModel,
    Loglikelihood,
    LoglikelihoodResult,
    OnDone,
    TokenLogprobs,
    TokenLogprobsResult,
    encode_pair,
)
from rueval.models.distributed import world
from rueval.models.factory import ModelOptions, ModelSpec

# Architectures whose logits are the output embeddings of the base model's last states and whose
# attention takes a 4D mask as it is given (tests/models checks both on a tiny model of each): loaded
# from transformers' own code, they are scored split and packed without a probe.
KNOWN_ARCHITECTURES = frozenset({"gpt2", "llama", "mistral", "qwen2"})

# torch and transformers are imported inside the methods: without them, `-m hf:` says what to install.


class HFCausalLM(LanguageModel):
    """A transformers causal LM. Every sequence starts with the model's BOS token (EOS for
    GPT-2-style models), so an empty context scores the whole continuation; ``bos`` other than
    "always" tokenizes as lm-eval's HFLM instead (harness_tokens).

    ``device_map="auto"`` spreads the weights over the GPUs with accelerate; ``peft`` merges an
    adapter directory into the weights; ``load_in`` ("8bit", "4bit") quantizes with bitsandbytes."""

    def __init__(
        self,
        path: str,
        device: str = "cpu",
        dtype: str = "auto",
        batch_size: int | str = "auto",
        trust_remote_code: bool = False,
        revision: str | None = None,
        max_batch_tokens: int | None = None,
        device_map: str | None = None,
        peft: str | None = None,
        load_in: str | None = None,
        loaded: tuple[Any, Any] | None = None,
        bos: str = ALWAYS,
    ):
        folder_hash = None if loaded else hash_while_loading(path, revision)
        require_libraries(path)
        from rueval.models.backends.prefix_tree import PACK_TOKENS, TreeStats

        self.device = check_device(device)
        placement = weights_placement(device_map, load_in, peft)
        self.model, self.tokenizer = loaded or load_weights(
            path, dtype, trust_remote_code, revision, placement, tokenizer_args(bos)
        )
        if peft:
            self.model = merged_adapter(self.model, peft)
        if placement:  # accelerate placed the weights: inputs go where the embeddings are
            self.device = self.model.get_input_embeddings().weight.device
        else:
            self.model.to(self.device)
        self.model.eval()
        # transformers 5.2x renamed the forward's past_key_values (in and out) to cache; the old name warns
        self._cache_name = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        _fuse_tanh_gelu(self.model)
        self.start_token = start_token_of(self.tokenizer, f"hf:{path}")
        self.max_length = _max_length(self.model.config, self.tokenizer)
        self.max_rows = 64 if batch_size == "auto" else int(batch_size)
        self.auto_batch = batch_size == "auto"
        # On a CPU, batches of 4,096 tokens keep a 512-wide model's activations under malloc's 32 MiB
        # (freed and reused from the heap, not faulted in afresh each pass): as fast as 16,384, half the memory.
        self.max_batch_tokens = max_batch_tokens or (65536 if self.device.type == "cuda" else 4096)
        # weights given in memory may differ from those they were loaded from: no revision names them
        revision_name = "in-memory" if loaded else model_revision(path, self.model.config, revision, folder_hash)
        self.identity = f"hf:{path}@{revision_name}"
        self.identity += f" peft={peft}@{content_hash(Path(peft))}" if peft else ""
        self.identity += f" load_in={load_in}" if load_in else ""
        self.identity += f" bos={bos}" if bos != ALWAYS else ""
        self.harness = (
            HarnessTokens(self.tokenizer, ADD_BOS[bos], self.max_length, f"hf:{path}") if bos != ALWAYS else None
        )
        self.stats = TreeStats()
        self.window = _sliding_window(self.model.config)  # before the probes: their forward passes read it
        known = _known_architecture(self.model)
        self.cascade_attention = known  # batched generation reads shared prefixes once (cascade_attention.py)
        self._split_head = known or self._head_matches_full_forward()
        self.pack_tokens = PACK_TOKENS if known or self._packing_matches_plain() else 0
        self._capabilities = Capabilities(
            loglikelihood=True,
            generation=True,
            token_logprobs=True,
            token_distribution=True,
            tokenizer=self.tokenizer,
            parameters=sum(p.numel() for p in self.model.parameters()),
            max_length=self.max_length,
        )

    @classmethod
    def from_loaded(cls, model: Any, tokenizer: Any, batch_size: int | str = "auto") -> HFCausalLM:
        """A model and tokenizer already in memory (a notebook's), on the model's own device. Its weights
        may differ from those it was loaded from, so its identity says "in-memory" and callers must not
        give it a request cache."""
        path = getattr(model.config, "name_or_path", "") or "model"
        return cls(path, device=str(model.device), batch_size=batch_size, loaded=(model, tokenizer))

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    # -- log-likelihood ------------------------------------------------------------------------
    def encode(self, request: Loglikelihood) -> tuple[list[int], int]:
        """Token ids of the whole sequence and the index of the first scored token (``encode_pair``, or
        lm-eval's under another --bos), the oldest context tokens dropped if the model's window is exceeded."""
        return self._encode_all([request])[0]

    def _encode_all(self, requests: Sequence[Loglikelihood]) -> list[tuple[list[int], int]]:
        """encode() of every request, their distinct texts tokenized in one call (the fast tokenizer's batch)."""
        if self.harness is not None:
            return self.harness.pairs(requests)
        texts: dict[str, None] = {}

        def collect(text: str) -> list[int]:
            texts[text] = None
            return []

        for request in requests:
            encode_pair(request, collect, self.start_token)
        tokenized = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
        ids = dict(zip(texts, tokenized, strict=True))
        return [fit_window(*encode_pair(r, ids.__getitem__, self.start_token), self.max_length) for r in requests]

    def loglikelihood(
        self, requests: Sequence[Loglikelihood], on_done: OnDone | None = None
    ) -> list[LoglikelihoodResult]:
        import torch

        from rueval.models.backends.prefix_tree import score_sequences

        harness = self.harness
        windows = Windows(harness.sequences(requests) if harness else [[pair] for pair in self._encode_all(requests)])
        report = (lambda scored: on_done(windows.finished(scored))) if on_done else None
        # A sliding window shorter than the sequences: a shared cache (cut to the window) or a tree
        # mask (which replaces the window's) would change the attention, so each is scored whole.
        share = self.window is None or max((len(ids) for ids, _ in windows.flat), default=0) <= self.window
        with torch.inference_mode():
            scores = self._fitting(
                lambda rows, tokens: score_sequences(
                    windows.flat,
                    self._forward,
                    self._head,
                    rows,
                    tokens,
                    self.stats,
                    min(self.pack_tokens, tokens),
                    share,
                    report,
                )
            )
        return windows.results(scores)

    def _fitting(self, compute):
        """``compute(rows, tokens)``; with batch_size "auto" the token budget (and rows with it) shrinks by a
        tenth on out-of-memory until it fits (as accelerate's find_executable_batch_size), and is kept. The
        device's cache is cleared only after a failure: a collection before every call costs a run on a CPU
        a fifth of a second each time."""
        if not self.auto_batch:
            return compute(self.max_rows, self.max_batch_tokens)
        try:
            from accelerate.utils.memory import clear_device_cache, should_reduce_batch_size
        except ImportError:
            raise RuevalError("--batch-size auto needs accelerate: pip install 'rueval[lm]'") from None
        rows, tokens = self.max_rows, self.max_batch_tokens
        while True:
            try:
                return compute(self.max_rows, self.max_batch_tokens)
            except RuntimeError as e:
                if not should_reduce_batch_size(e):
                    raise
            clear_device_cache(garbage_collection=True)
            budget = int(self.max_batch_tokens * 0.9)
            if budget == 0:
                raise RuevalError("the model runs out of memory even on one sequence at a time")
            self.max_rows, self.max_batch_tokens = max(1, rows * budget // tokens), budget

    def _tokens(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _forward(self, input_ids, past, mask, positions):
        import torch
        from transformers import DynamicCache

        from rueval.models.backends.batch_generation import growing_cache

        device = self.device
        if past and self.window is None:  # the past copied once into a cache with room for the new tokens
            cache = growing_cache(past, past[0][0].shape[2] + input_ids.shape[1])
        else:
            cache = DynamicCache(ddp_cache_data=past, config=self.model.config) if past else None
        if mask.dim() == 4:  # a tree mask: transformers takes a 4D mask as additive, in the model's dtype
            dtype, mask = self.model.dtype, mask.to(device)  # made additive where it is used (a GPU's is large)
            mask = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill_(~mask, torch.finfo(dtype).min)
        out, hidden = self._call(input_ids, cache, mask, positions)
        return hidden, [(layer.keys, layer.values) for layer in out[self._cache_name].layers]

    def _call(self, input_ids, cache, mask, positions, keep_cache=True, **attention):
        """The model's output and its last states (the logits themselves for a model run whole); with
        ``keep_cache`` False no key/value cache is made (a forward whose past nothing reads); ``attention``:
        arguments for the attention function (rueval.models.backends.cascade_attention)."""
        device = self.device
        kwargs = {
            "input_ids": input_ids.to(device),
            "attention_mask": mask.to(device),
            "position_ids": positions.to(device),
            self._cache_name: cache,
            "use_cache": keep_cache,
            **attention,
        }
        if self._split_head:
            out = self.model.base_model(**kwargs)
            return out, out.last_hidden_state
        out = self.model(**kwargs)  # the model post-processes logits: take them whole
        return out, out.logits

    def _head(self, hidden):
        return self.model.get_output_embeddings()(hidden) if self._split_head else hidden

    def _head_matches_full_forward(self) -> bool:
        """Whether logits = output embeddings(base model states). Then the output head runs only
        where a scored token follows; models that scale or cap logits are run whole instead."""
        import torch

        head = self.model.get_output_embeddings()
        if head is None or getattr(self.model, "base_model", None) is self.model:
            return False
        ids = torch.tensor([[self.start_token, *self._tokens("проверка связи")[:6]]], device=self.device)
        with torch.inference_mode():
            full = self.model(input_ids=ids).logits.float()
            split = head(self.model.base_model(input_ids=ids).last_hidden_state).float()
        return full.shape == split.shape and torch.allclose(full, split, atol=1e-4, rtol=1e-4)

    def _packing_matches_plain(self) -> bool:
        """Whether this model honours a tree attention mask: a few short sequences that share
        prefixes, scored packed (on a forwarded prefix's cache) and as plain sequences, agree.
        Models that build their own masks or biases from the token order (ALiBi) ignore it or
        refuse it; they are scored without packing."""
        import math

        import torch

        from rueval.models.backends.prefix_tree import score_sequences

        start, ids = self.start_token, self._tokens("один два три четыре пять шесть семь восемь")[:6]
        if len(ids) < 6:
            return False
        a, b, c, d, e, f = ids
        probe = [([start, a, b, c, d], 2), ([start, a, b, c, e, f], 3), ([start, a, b, f, e], 3), ([start, a, c], 2)]
        with torch.inference_mode():
            plain = score_sequences(probe, self._forward, self._head, 8, 4096, pack_tokens=0)
            # start, a forwarded as a head (their subtree has 6 tokens to forward); b's subtree packed on its cache
            try:
                packed = score_sequences(probe, self._forward, self._head, 8, 4096, pack_tokens=4)
            except Exception:  # noqa: BLE001 - any refusal of a 4D mask means: do not pack
                return False
        # a model that ignores the mask is off by whole nats; half precision only by a little
        return all(math.isclose(p, q, rel_tol=1e-3, abs_tol=1e-2) for (p, _), (q, _) in zip(plain, packed, strict=True))

    # -- token log-probabilities of whole texts (membership scores) ---------------------------------
    def token_logprobs(
        self, requests: Sequence[TokenLogprobs], on_done: OnDone | None = None
    ) -> list[TokenLogprobsResult]:
        from rueval.models.backends.hf_token_logprobs import token_logprobs

        return token_logprobs(self, requests, on_done)

    # -- generation ----------------------------------------------------------------------------
    @property
    def generation_mode(self) -> str:
        """BATCHED, or ONE_AT_A_TIME with --batch-size 1 or for a model the batched loop cannot serve
        exactly (rueval.models.backends.hf_generation)."""
        if self.max_rows == 1 or not batched_mode_fits(self):
            return ONE_AT_A_TIME
        return BATCHED

    def generate(self, requests: Sequence[Generation], on_done: OnDone | None = None) -> list[str]:
        """Texts generated in the model's generation mode; a sampled request draws from its own generator,
        seeded from its prompt, settings and seed."""
        if self.generation_mode == BATCHED:
            return generate_batched(self, requests, on_done)
        texts = []
        for i, request in enumerate(requests):
            text = self._generate_one(request)
            texts.append(text)
            if on_done is not None:
                on_done([(i, text)])
        return texts

    def _generate_one(self, request: Generation) -> str:
        return generate_one(self, request)

    def _generation_step(self, input_ids, cache, mask, positions, **attention):
        """The logits after each row's last token (float32), the cache grown in place."""
        out, hidden = self._call(input_ids, cache, mask, positions, **attention)
        return self._head(hidden[:, -1]).float()


def open_model(spec: ModelSpec, options: ModelOptions) -> HFCausalLM:
    """The backend of `-m hf:PATH_OR_HUB_ID` (BACKENDS)."""
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
            bos=options.bos,
        )
        if (parameters := model.capabilities.parameters) is not None:
            loading.outcome = f"{parameters / 1e6:.1f}M parameters"
    return model


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


def _fuse_tanh_gelu(model) -> None:
    """GPT-2-style models (ruGPT-3 among them) compute GELU's tanh approximation op by op in
    Python; torch's fused kernel computes the same function (to 3e-7) about 4x faster, and that
    activation is a fifth of such a model's time on a CPU."""
    import torch
    from transformers.activations import NewGELUActivation

    for module in model.modules():
        for name, child in module.named_children():
            if type(child) is NewGELUActivation:
                setattr(module, name, torch.nn.GELU(approximate="tanh"))


def _known_architecture(model) -> bool:
    """Whether the model is one of KNOWN_ARCHITECTURES as transformers builds it, with torch's attention."""
    config = model.config
    return (
        config.model_type in KNOWN_ARCHITECTURES
        and type(model).__module__.startswith("transformers.models.")
        and getattr(config, "_attn_implementation", None) in ("sdpa", "eager")
    )


def _sliding_window(config) -> int | None:
    """The attention window of a model whose layers (some or all) see only recent tokens, else None."""
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    window = getattr(config, "sliding_window", None)
    if not isinstance(window, int) or window <= 0:
        return None
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        return window if "sliding_attention" in layer_types else None
    return window if getattr(config, "use_sliding_window", True) else None


def _max_length(config, tokenizer) -> int:
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    limit = getattr(tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and limit < 1_000_000 else 2048
