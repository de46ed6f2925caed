"""How an encoder is fine-tuned: jiant-russian's defaults unless set."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rueval.core.errors import RuevalError
from rueval.core.option_fields import option
from rueval.scoring.stats import SEED_MAX, is_seed

PRECISIONS = ("fp32", "fp16", "bf16")


@dataclass(frozen=True)
class FinetuneOptions:
    """How an encoder is fine-tuned; every field is JSON-serialisable (the run's fingerprint holds them)."""

    # the command line's --ft-* options (rueval.solvers.options.FINETUNE_NAMES)
    epochs: float = option(10.0, help="finetune: epochs (jiant: 10).")
    lr: float = option(1e-5, help="finetune: learning rate (jiant: 1e-5).")
    # per process; times gradient_accumulation and processes per optimizer step
    batch_size: int = option(4, help="finetune: batch size per process.")
    # tokens of a text pair (of each option for multiple choice)
    max_length: int = option(256, help="finetune: tokens per input.")
    seed: int = option(0, help="finetune: training seed. Default: --seed.")
    gradient_accumulation: int = option(1, help="finetune: gradient accumulation.")
    precision: str = option("fp32", help="finetune: fp32, or fp16/bf16 on a GPU.")
    # 0 keeps the last checkpoint
    heldout: float = option(0.1, help="finetune: share of train held out to pick the model.")
    # no command-line option: the Python API's
    dynamic_padding: bool = option(True, help="Pad each batch to its longest input, not to max_length.")
    group_by_length: bool = option(True, help="Batches of inputs of similar length.")
    checkpoint_steps: int | None = option(
        None, help="Checkpoint (and select) every this many steps; None: every epoch."
    )

    def __post_init__(self) -> None:
        number, whole = _finite_number, _whole_number
        checks = {  # each field: whether it is valid, and what it must be
            "epochs": (number(self.epochs) and self.epochs > 0, "a finite number above 0"),
            "lr": (number(self.lr) and self.lr > 0, "a finite number above 0"),
            "batch_size": (whole(self.batch_size) and self.batch_size >= 1, "a whole number from 1"),
            "max_length": (whole(self.max_length) and self.max_length >= 8, "a whole number from 8"),
            "seed": (is_seed(self.seed), f"a whole number from 0 to {SEED_MAX}"),
            "gradient_accumulation": (
                whole(self.gradient_accumulation) and self.gradient_accumulation >= 1,
                "a whole number from 1",
            ),
            "heldout": (number(self.heldout) and 0 <= self.heldout < 1, "a number from 0 to below 1"),
            "checkpoint_steps": (
                self.checkpoint_steps is None or whole(self.checkpoint_steps) and self.checkpoint_steps >= 1,
                "a whole number from 1, or none",
            ),
        }
        for name, (valid, expected) in checks.items():
            if not valid:
                raise RuevalError(
                    f"fine-tuning option {name}={getattr(self, name)!r:.40} is out of range: expected {expected}"
                )
        if self.precision not in PRECISIONS:
            raise RuevalError(f"fine-tuning precision {self.precision!r}; expected one of: {', '.join(PRECISIONS)}")


def _finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
