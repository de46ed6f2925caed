"""Tiny random models of the architectures `hf:` knows, for tests: 2 layers, 64 wide, 4 query heads over 2
key/value heads, the tiny GPT-2's tokenizer, saved to a folder as a hub model is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer


def tiny_of(architecture: str, tokenizer_dir: Path, folder: Path, **config: Any) -> Path:
    """A tiny random model of the architecture (seeded), saved with the tiny GPT-2's tokenizer; ``config``:
    settings beside the defaults (a sliding window, a longer context)."""
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    settings = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.for_model(architecture, **(settings | config))).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
