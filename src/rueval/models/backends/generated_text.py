"""How `hf:` turns generated tokens into an answer's text the way vLLM and OpenAI-compatible servers do, so
that the backends' texts agree (docs/backends.md, Generation across backends).

- Stop sequences are matched in the generated text alone, as vLLM, servers and lm-evaluation-harness match
  them. transformers' own ``stop_strings`` also matches a stop that begins in the prompt: a prompt ending
  in "г" stopped a generation at its first " г" for the stop "г г", a text holding no stop and shorter
  than every other backend's.
- A text ends without the U+FFFD that decoding gives its last tokens when they are bytes of no complete
  character (a budget reached, or the end-of-text token, between the bytes of a byte-level BPE's
  character; or bytes no character begins with): vLLM's detokenizer holds back text that ends in U+FFFD
  until more tokens complete it, and gives nothing of it when none do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class GeneratedTextStop:
    """A transformers stopping criterion: a row is done once its tokens after ``prompt_length``, decoded as
    the answer is, hold one of ``stop``."""

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_length: int):
        self.tokenizer, self.stop, self.prompt_length = tokenizer, [s for s in stop if s], prompt_length

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids[:, self.prompt_length :], skip_special_tokens=True)
        return torch.tensor([any(s in text for s in self.stop) for text in texts], device=input_ids.device)


def answer_text(tokenizer: Any, tokens: Sequence[int]) -> str:
    """The generated tokens' text, special tokens left out, without the U+FFFD its last bytes decode to."""
    return tokenizer.decode(tokens, skip_special_tokens=True).rstrip("\ufffd")
