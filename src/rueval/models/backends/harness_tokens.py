"""Start-token policies (``--bos``): `-m hf:`'s own, or lm-evaluation-harness's `HFLM` tokenization.

``always`` (`-m hf:`'s default, TAPE's protocol): every sequence starts with BOS (EOS where there is
none), the texts tokenized without special tokens (``encode_pair``). The others tokenize as lm-eval
0.4.13's ``HFLM`` does with ``add_bos_token`` unset (``tokenizer``), ``True`` (``true``) or ``False``
(``false``), which is what ``--model hf --model_args pretrained=...`` means:

- a text is tokenized with the tokenizer's own special tokens (GPT-2's add none, Llama's add BOS),
  unless ``add_bos_token`` says otherwise (the tokenizer is then loaded with it, as HFLM loads it) or
  the text starts with the BOS text already (``HFLM.tok_encode``);
- a non-empty context and the continuation are split as ``encode_pair`` splits them, without a
  start token of rueval's own (``TemplateLM._encode_pair``);
- an empty context is lm-eval's prefix token (BOS, else EOS) before the continuation's plain tokens,
  unless they start with it (``TemplateLM.loglikelihood``); a rolling request (``loglikelihood_rolling``)
  puts the prefix token before the whole text as ``tok_encode`` gives it;
- a sequence longer than the model's window keeps its last window + 1 tokens (the last is never
  input); a generation prompt keeps its last window - new tokens (``HFLM.generate_until``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rueval.core.errors import RuevalError
from rueval.models.backends.token_ids import fit_window, start_token_of
from rueval.models.base import Generation, Loglikelihood, describe, move_spaces, text_of

ALWAYS = "always"
# each lm-eval policy's HFLM add_bos_token: None leaves the special tokens to the tokenizer
ADD_BOS = {"tokenizer": None, "true": True, "false": False}


def tokenizer_args(policy: str) -> dict[str, bool]:
    """What the tokenizer is loaded with under ``policy``: HFLM passes add_bos_token on when it is set."""
    add_bos = ADD_BOS.get(policy)
    return {} if add_bos is None else {"add_bos_token": add_bos}


@dataclass(frozen=True)
class HarnessTokens:
    """lm-eval HFLM's tokenization with ``add_bos`` as its add_bos_token (None: the tokenizer's own)."""

    tokenizer: Any
    add_bos: bool | None
    window: int  # the model's max_length
    owner: str  # the model, for errors

    @property
    def prefix(self) -> int:
        """HFLM's prefix_token_id: BOS, else EOS."""
        return start_token_of(self.tokenizer, self.owner)

    def special(self, text: str, asked: bool | None = None) -> bool:
        """Whether ``text`` is tokenized with special tokens (HFLM.tok_encode): as asked, else not when it
        starts with the prefix token's text, else add_bos_token, else the tokenizer's default (with)."""
        if asked is not None:
            return asked
        if text.startswith(self.tokenizer.decode(self.prefix)):
            return False
        return True if self.add_bos is None else self.add_bos

    def needs(self, request: Loglikelihood) -> list[tuple[str, bool]]:
        """The texts ``pair`` tokenizes, with or without special tokens."""
        context, continuation = text_of(request.context), request.continuation
        if not context:
            return [(continuation, self.special(continuation) if request.rolling else False)]
        context, continuation = move_spaces(context, continuation)
        return [(text, self.special(text)) for text in (context, context + continuation)]

    def pairs(self, requests: Sequence[Loglikelihood]) -> list[tuple[list[int], int]]:
        """``pair`` of every request, the distinct texts tokenized in one call per special-token setting."""
        wanted = dict.fromkeys(key for request in requests for key in self.needs(request))
        ids: dict[tuple[str, bool], list[int]] = {}
        for special in (False, True):
            texts = [text for text, flag in wanted if flag is special]
            if texts:
                tokenized = self.tokenizer(texts, add_special_tokens=special)["input_ids"]
                ids.update(zip(((text, special) for text in texts), tokenized, strict=True))
        return [self.pair(request, ids) for request in requests]

    def pair(self, request: Loglikelihood, ids: dict[tuple[str, bool], list[int]]) -> tuple[list[int], int]:
        """Token ids of the sequence and the index of its first scored token, from ``ids`` (``needs``' texts)."""
        tokens = [ids[key] for key in self.needs(request)]
        if text_of(request.context):
            context, whole = tokens
            if not context or len(whole) <= len(context):
                part = "context" if not context else "continuation"
                raise RuevalError(f"{self.owner}: {describe(request)} has no {part} tokens as lm-eval tokenizes it")
            return fit_window([*context, *whole[len(context) :]], len(context), self.window + 1)
        (text,) = tokens
        sequence = text if text[:1] == [self.prefix] and not request.rolling else [self.prefix, *text]
        if len(sequence) < 2:
            raise RuevalError(f"{self.owner}: {describe(request)} has no tokens to score")
        if not request.rolling:
            return fit_window(sequence, 1, self.window + 1)
        if len(text) > self.window:
            raise RuevalError(
                f"{self.owner}: a rolling log-likelihood text of {len(text)} tokens is longer than the model's "
                f"window of {self.window}; rueval does not compute lm-eval's rolling windows"
            )
        return sequence, 1

    def prompt(self, request: Generation) -> list[int]:
        """A generation prompt as HFLM.tok_batch_encode gives it (it checks the BOS text itself, not the
        prefix token's), cut to leave room for the new tokens."""
        text = text_of(request.prompt)
        bos = getattr(self.tokenizer, "bos_token", None)
        special = False if bos is not None and text.startswith(bos) else self.add_bos is not False
        ids = self.tokenizer(text, add_special_tokens=special)["input_ids"]
        if not ids:
            raise RuevalError(f"{self.owner}: {describe(request)} has no tokens as lm-eval tokenizes it")
        return ids[-(self.window - request.max_new_tokens) :]
