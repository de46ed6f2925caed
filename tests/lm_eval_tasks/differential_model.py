"""The tiny GPT-2 of tests/conftest.py, trained briefly on the suite's documents so that a task's options
are far from tied: a random model scores them all near log(1/vocabulary), where a difference in the
fifth decimal would flip an answer and hide or fake a disagreement."""

from __future__ import annotations

import shutil
from pathlib import Path


def train_briefly(base: Path, texts: list[str], target: Path, steps: int = 200, seed: int = 0) -> Path:
    """Copy the model at ``base`` to ``target`` and train it for ``steps`` batches of ``texts``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    shutil.copytree(base, target)
    tokenizer = AutoTokenizer.from_pretrained(target)
    model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)
    encoded = tokenizer([t + tokenizer.eos_token for t in texts], truncation=True, max_length=128)["input_ids"]
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        order = torch.randperm(len(encoded))[:8].tolist()
        batch = tokenizer.pad({"input_ids": [encoded[i] for i in order]}, return_tensors="pt")
        labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    model.save_pretrained(target)
    return target
