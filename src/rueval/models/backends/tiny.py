"""A small random GPT-2 with a byte-level BPE tokenizer trained on rueval's bundled Russian
samples: a real transformers model for offline tests, demos and benchmarks (no download), and, trained
briefly (``train_tiny_model``), one whose answers are far from tied: a random model scores every option
near log(1/vocabulary) and its top two logits are often within rounding, where a difference in the
fifth decimal would flip an answer or a generated token and hide or fake a disagreement."""

from __future__ import annotations

import json
from pathlib import Path

from rueval.core.errors import RuevalError
from rueval.data.local import SAMPLES_DIR

EOS = "<|endoftext|>"
BOS = "<s>"  # the start token of a tokenizer that adds its own (``adds_bos``)


def sample_texts() -> list[str]:
    """Every string field of every bundled sample record of RSG's and TAPE's tasks (the tiny model's
    texts, the same whichever other tasks bring samples of their own)."""
    from rueval.tasks import RSG, TAPE

    folders = {task.folder for task in (*RSG.tasks, *TAPE.tasks)}
    texts: list[str] = []

    def collect(value) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    for path in sorted(path for path in SAMPLES_DIR.glob("*/*.jsonl") if path.parent.name in folders):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                collect(json.loads(line))
    return texts


def model_folder(out_dir: Path) -> Path:
    """The folder a model is saved to, made now: transformers' save_pretrained only logs a path that is
    a file, and saves nothing."""
    out_dir = Path(out_dir)
    try:
        if out_dir.exists() and not out_dir.is_dir():
            raise RuevalError(f"{out_dir}: a file is in the way; a model is saved as a folder")
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a name too long, no permission, a read-only disk
        raise RuevalError(f"{out_dir}: cannot be written ({e.strerror or e})") from None
    return out_dir


def build_tiny_gpt2(
    out_dir: Path,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 2,
    vocab_size: int = 2000,
    n_positions: int = 2048,
    seed: int = 0,
    adds_bos: bool = False,
) -> Path:
    """Train the tokenizer, initialise the model with a fixed seed, save both to ``out_dir``. The
    tokenizer's BOS is its EOS and it adds no special tokens (GPT-2's way), or with ``adds_bos`` a BOS
    of its own that it puts before every text (Llama's way)."""
    out_dir = model_folder(out_dir)
    import torch
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    specials = [EOS, BOS] if adds_bos else [EOS]
    bpe.train_from_iterator(
        sample_texts(), vocab_size=vocab_size, min_frequency=2, special_tokens=specials, show_progress=False
    )
    if adds_bos:
        bos_id = bpe.token_to_id(BOS)
        bpe.post_processor = processors.TemplateProcessing(
            single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
        )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=specials[-1], eos_token=EOS, unk_token=EOS, pad_token=EOS
    )
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def train_tiny_model(folder: Path, texts: list[str], steps: int = 200, seed: int = 0, max_length: int = 128) -> Path:
    """Train the causal model saved in ``folder`` for ``steps`` batches of 8 of ``texts`` (each ended by
    the end token, at most ``max_length`` tokens; AdamW, learning rate 3e-3, batches drawn with ``seed``) and
    save it back there."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    encoded = tokenizer([t + tokenizer.eos_token for t in texts], truncation=True, max_length=max_length)["input_ids"]
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
    model.save_pretrained(folder)
    return Path(folder)


def build_tiny_bert(
    out_dir: Path,
    num_hidden_layers: int = 2,
    hidden_size: int = 64,
    num_attention_heads: int = 2,
    vocab_size: int = 2000,
    max_position_embeddings: int = 512,
    seed: int = 0,
) -> Path:
    """A random BERT encoder with a WordPiece tokenizer trained on the bundled samples, saved to ``out_dir``."""
    out_dir = model_folder(out_dir)
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizer

    wordpiece = BertWordPieceTokenizer(lowercase=False, strip_accents=False)
    wordpiece.train_from_iterator(sample_texts(), vocab_size=vocab_size, min_frequency=2, show_progress=False)
    tokenizer = BertTokenizer(vocab=wordpiece.get_vocab(), do_lower_case=False, strip_accents=False)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=4 * hidden_size,
        max_position_embeddings=max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
