"""Stop sequences matched in the generated text alone, as vLLM, OpenAI-compatible servers and
lm-evaluation-harness match them. transformers' own ``stop_strings`` also matches a stop that begins in
the prompt: a prompt ending in "г" stops a generation at its first " г" for the stop "г г", a text that
holds no stop and is shorter than the one every other backend returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class GeneratedTextStop:
    """A transformers stopping criterion: a row is done once its tokens after ``prompt_length``, decoded as
    the backend decodes its answer, hold one of ``stop``."""

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_length: int):
        self.tokenizer, self.stop, self.prompt_length = tokenizer, [s for s in stop if s], prompt_length

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids[:, self.prompt_length :], skip_special_tokens=True)
        return torch.tensor([any(s in text for s in self.stop) for text in texts], device=input_ids.device)
