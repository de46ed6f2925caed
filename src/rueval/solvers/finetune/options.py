"""How an encoder is fine-tuned: jiant-russian's defaults unless set."""

from __future__ import annotations

from dataclasses import dataclass

from rueval.errors import RuevalError

PRECISIONS = ("fp32", "fp16", "bf16")


@dataclass(frozen=True)
class FinetuneOptions:
    """How an encoder is fine-tuned; every field is JSON-serialisable (the run's fingerprint holds them)."""

    epochs: float = 10.0
    lr: float = 1e-5
    batch_size: int = 4  # per process; times gradient_accumulation and processes per optimizer step
    max_length: int = 256  # tokens of a text pair (of each option for multiple choice)
    seed: int = 0
    gradient_accumulation: int = 1
    precision: str = "fp32"  # fp16 / bf16 on a GPU
    heldout: float = 0.1  # share of train held out to select the best checkpoint; 0 keeps the last
    dynamic_padding: bool = True  # pad each batch to its longest input, not to max_length
    group_by_length: bool = True  # batches of inputs of similar length
    checkpoint_steps: int | None = None  # checkpoint (and select) every this many steps; None: every epoch

    def __post_init__(self) -> None:
        checks = {
            "epochs": self.epochs > 0,
            "lr": self.lr > 0,
            "batch_size": self.batch_size >= 1,
            "max_length": self.max_length >= 8,
            "gradient_accumulation": self.gradient_accumulation >= 1,
            "heldout": 0 <= self.heldout < 1,
            "checkpoint_steps": self.checkpoint_steps is None or self.checkpoint_steps >= 1,
        }
        for name, valid in checks.items():
            if not valid:
                raise RuevalError(f"fine-tuning option {name}={getattr(self, name)!r} is out of range")
        if self.precision not in PRECISIONS:
            raise RuevalError(f"fine-tuning precision {self.precision!r}; expected one of: {', '.join(PRECISIONS)}")
