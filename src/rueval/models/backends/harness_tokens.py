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
  puts the prefix token before the whole text as ``tok_encode`` gives it, in lm-eval's rolling windows
  where it is longer than the model's window (each window scored from the tokens before it in the window);
- a sequence longer than the model's window keeps its last window + 1 tokens (the last is never
  input); a generation prompt keeps its last window - new tokens (``HFLM.generate_until``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from rueval.core.errors import RuevalError
from rueval.models.backends.token_ids import fit_window, start_token_of
from rueval.models.base import Generation, Loglikelihood, LoglikelihoodResult, describe, move_spaces, text_of

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

    @cached_property
    def prefix(self) -> int:
        """HFLM's prefix_token_id: BOS, else EOS."""
        return start_token_of(self.tokenizer, self.owner)

    @cached_property
    def prefix_text(self) -> str:
        return self.tokenizer.decode(self.prefix)

    def special(self, text: str) -> bool:
        """Whether ``text`` is tokenized with special tokens (HFLM.tok_encode): not when it starts with the
        prefix token's text, else as add_bos_token says, else the tokenizer's default (with)."""
        if text.startswith(self.prefix_text):
            return False
        return True if self.add_bos is None else self.add_bos

    def needs(self, request: Loglikelihood) -> list[tuple[str, bool]]:
        """The texts a request's sequences are made of, each with whether it is tokenized with special tokens."""
        context, continuation = text_of(request.context), request.continuation
        if not context:
            return [(continuation, self.special(continuation) if request.rolling else False)]
        context, continuation = move_spaces(context, continuation)
        return [(text, self.special(text)) for text in (context, context + continuation)]

    def sequences(self, requests: Sequence[Loglikelihood]) -> list[list[tuple[list[int], int]]]:
        """Each request's sequences to score (token ids, index of the first scored token): one, or a rolling
        text's windows; the distinct texts tokenized in one call per special-token setting."""
        wanted = dict.fromkeys(key for request in requests for key in self.needs(request))
        ids: dict[tuple[str, bool], list[int]] = {}
        for special in (False, True):
            texts = [text for text, flag in wanted if flag is special]
            if texts:
                tokenized = self.tokenizer(texts, add_special_tokens=special)["input_ids"]
                ids.update(zip(((text, special) for text in texts), tokenized, strict=True))
        return [self.windows(request, [ids[key] for key in self.needs(request)]) for request in requests]

    def pairs(self, requests: Sequence[Loglikelihood]) -> list[tuple[list[int], int]]:
        """The one sequence of each request (a rolling text longer than the window has several)."""
        pairs = []
        for request, windows in zip(requests, self.sequences(requests), strict=True):
            if len(windows) > 1:
                raise ValueError(f"{describe(request)} is scored in {len(windows)} windows")
            pairs.append(windows[0])
        return pairs

    def windows(self, request: Loglikelihood, tokens: list[list[int]]) -> list[tuple[list[int], int]]:
        """The sequences of a request, from the tokens of ``needs``' texts."""
        if text_of(request.context):
            context, whole = tokens
            if not context or len(whole) <= len(context):
                part = "context" if not context else "continuation"
                raise RuevalError(f"{self.owner}: {describe(request)} has no {part} tokens as lm-eval tokenizes it")
            return [fit_window([*context, *whole[len(context) :]], len(context), self.window + 1)]
        (text,) = tokens
        if not request.rolling:
            sequence = text if text[:1] == [self.prefix] else [self.prefix, *text]
            if len(sequence) < 2:
                raise RuevalError(f"{self.owner}: {describe(request)} has no tokens to score")
            return [fit_window(sequence, 1, self.window + 1)]
        if not text:
            raise RuevalError(f"{self.owner}: {describe(request)} has no tokens to score")
        # lm-eval's get_rolling_token_windows(context_len=1) made disjoint: the first window after the prefix
        # token, each later one the window's worth of tokens ending at its last, scoring those not scored yet
        windows = [([self.prefix, *text[: self.window]], 1)]
        done = min(self.window, len(text))
        while done < len(text):
            size = min(len(text) - done, self.window)
            windows.append((text[done + size - self.window - 1 : done + size], self.window + 1 - size))
            done += size
        return windows

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


class Windows:
    """Requests each scored as one sequence or (a rolling text) several, the scores of a request's
    sequences summed into its result, which is reported once every one of them is scored."""

    def __init__(self, per_request: list[list[tuple[list[int], int]]]):
        self.per_request = per_request
        self.flat = [sequence for sequences in per_request for sequence in sequences]
        self.owner = [i for i, sequences in enumerate(per_request) for _ in sequences]
        self.members: list[list[int]] = [[] for _ in per_request]
        for j, i in enumerate(self.owner):
            self.members[i].append(j)
        self.scores: dict[int, tuple[float, bool]] = {}

    def finished(self, scored: list[tuple[int, tuple[float, bool]]]) -> list[tuple[int, LoglikelihoodResult]]:
        """The requests whose last sequence is among ``scored`` (index into ``flat``, score), with their results."""
        self.scores.update(scored)
        owners = sorted({self.owner[j] for j, _ in scored})
        return [(i, self.result(i)) for i in owners if all(j in self.scores for j in self.members[i])]

    def results(self, scores: list[tuple[float, bool]]) -> list[LoglikelihoodResult]:
        self.scores.update(enumerate(scores))
        return [self.result(i) for i in range(len(self.per_request))]

    def result(self, i: int) -> LoglikelihoodResult:
        scores = [self.scores[j] for j in self.members[i]]
        tokens = sum(len(ids) - first for ids, first in self.per_request[i])
        logprob = scores[0][0] if len(scores) == 1 else sum(score for score, _ in scores)
        return LoglikelihoodResult(logprob, tokens, all(greedy for _, greedy in scores))
