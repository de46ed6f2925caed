"""Token-id prompts, built exactly as `-m hf:` builds them, for backends that send token ids.

A server given text tokenizes it itself and puts a start token in front only where the tokenizer
adds one (Llama-style), never for GPT-2-style tokenizers, while `hf:` always starts with BOS (EOS
where there is none). On the same weights the scores then differ, by up to whole nats, and an
empty context loses its first token (nothing predicts it). Token ids avoid both: the start token,
the context's tokens, then the continuation's (``encode_pair``); a generation prompt starts with
the same start token. A window (the server's ``max_model_len``) drops the oldest context tokens
of a longer sequence, and cuts a generation prompt to leave room for its new tokens, as `hf:` does.

``tokenizer=`` says where the tokens come from: a local path or hub id (or a loaded tokenizer);
``"auto"`` (the default of `openai:`): the served model's own when it can be had, else text prompts
(with a warning: the scores may then differ from `hf:`'s); ``"text"``: text prompts, tokenized by the
server; or ``"server"``: the served model's own, refused when it cannot be had. The served model's
own is its weights folder (the `/v1/models` ``root``) when that folder is on this machine and
tokenizes as the server does, else the server's ``/tokenize`` endpoint (vLLM, SGLang), one text at a
time, remembered. Its start token is then the BOS the server adds
(Llama-style), or the BOS or EOS its ``/tokenizer_info`` names (vLLM's
``--enable-tokenizer-info-endpoint``); a server that tells neither is refused with what to do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rueval.core.errors import RuevalError
from rueval.core.progress import info, warn
from rueval.models.base import Generation, Loglikelihood, encode_pair, text_of

if TYPE_CHECKING:
    from rueval.models.factory import ModelOptions, ModelSpec

AUTO = "auto"  # the served model's own tokenizer if it can be had, else text prompts
SERVER = "server"  # the served model's own tokenizer, or an error
TEXT = "text"  # text prompts: the server tokenizes them
MODES = (AUTO, SERVER, TEXT)
PROBE = "Проверка связи: 12 слов, ёлка и 🙂 — «кавычки»."  # tokenized both ways: do they agree?


@dataclass(frozen=True)
class PromptTokens:
    """Text -> token ids (no special tokens), the start token, and a name for the cache identity."""

    tokens: Callable[[str], list[int]]
    start_token: int
    name: str
    window: int | None = None  # the longest sequence the model takes

    def pair(self, request: Loglikelihood) -> tuple[list[int], int]:
        """The sequence to score and the index of its first scored token."""
        ids, first = encode_pair(request, self.tokens, self.start_token)
        return fit_window(ids, first, self.window)

    def text(self, text: str) -> list[int]:
        """A whole text to score (TokenLogprobs): the start token and the text's tokens, its first ones where it is
        longer than the window (as hf: cuts it)."""
        ids = [self.start_token, *self.tokens(text)]
        return ids if self.window is None else ids[: self.window]

    def scoring(self) -> PromptTokens:
        """For scoring by vLLM's prompt logprobs, served or in process: the window less the one token vLLM generates
        even when none is asked for (it refuses a prompt as long as its max_model_len)."""
        return self if self.window is None else replace(self, window=self.window - 1)

    def prompt(self, request: Generation) -> list[int]:
        """A generation prompt: the start token and the prompt's tokens, the oldest cut to leave room."""
        ids = [self.start_token, *self.tokens(text_of(request.prompt))]
        return ids if self.window is None else ids[-(self.window - request.max_new_tokens) :]


def fit_window(ids: list[int], first: int, window: int | None) -> tuple[list[int], int]:
    """The oldest context tokens dropped until the sequence fits ``window``."""
    if window is None or len(ids) <= window:
        return ids, first
    cut = len(ids) - window
    if cut >= first:
        raise RuevalError(f"a continuation of {len(ids) - first} tokens does not fit the model's {window}")
    return ids[cut:], first - cut


def start_token_of(tokenizer: Any, owner: str) -> int:
    """hf:'s rule: BOS, else EOS."""
    start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if start is None:
        raise RuevalError(f"{owner}: the tokenizer has neither a BOS nor an EOS token to start sequences with")
    return start


def load_tokenizer(tokenizer: Any) -> Any:
    """A transformers tokenizer, loaded from a path or hub id (a tokenizer object as it is)."""
    if not isinstance(tokenizer, str | Path):
        return tokenizer
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(tokenizer))
    except (OSError, ValueError) as e:
        raise RuevalError(f"cannot load the tokenizer {tokenizer} ({str(e).splitlines()[0]})") from None


def local_tokens(tokenizer: Any, owner: str) -> PromptTokens:
    """A transformers tokenizer (or a path or hub id to load one from) as PromptTokens."""
    tokenizer = load_tokenizer(tokenizer)
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    return PromptTokens(
        lambda text: tokenizer(text, add_special_tokens=False)["input_ids"], start_token_of(tokenizer, owner), name
    )


Request = Callable[[str, dict | None], Any]  # (path under the server's root URL, payload or None for GET) -> JSON


def served_tokens(request: Request, entry: dict, owner: str) -> PromptTokens:
    """The served model's tokenizer (``tokenizer="server"``), from its `/v1/models` ``entry``; the
    window is the entry's ``max_model_len``."""
    window = entry.get("max_model_len") if isinstance(entry.get("max_model_len"), int) else None
    server = _ServerTokenizer(request)
    root = entry.get("root")
    if isinstance(root, str) and (Path(root) / "tokenizer_config.json").is_file():
        found = local_tokens(root, owner)
        if server.available() is False or server(PROBE) == found.tokens(PROBE):
            return replace(found, window=window)
    if not server.available():
        raise NoServedTokenizer(
            owner, f"the server has no /tokenize endpoint and its weights folder ({root}) is not on this machine"
        )
    return PromptTokens(server, server.start_token(owner), "server /tokenize", window)


def say_how_prompts_go(owner: str, tokens: PromptTokens | None, reason: str, quietly: bool = False) -> None:
    """Once per model: token ids (and whose tokenizer), or text and why scores may then differ from hf:'s
    (a warning, unless text was asked for)."""
    if tokens is not None:
        info(f"{owner}: prompts go as token ids built as hf: builds them ({tokens.name})")
        return
    (info if quietly else warn)(
        f"{owner}: prompts go as text ({reason}); the server tokenizes them without the start token hf: puts "
        "first (unless its tokenizer adds one), so scores may differ from hf:'s on the same weights; "
        "--tokenizer PATH_OR_HUB_ID (the served model's) makes them token-exact"
    )


class NoServedTokenizer(RuevalError):
    """The served model's tokenizer cannot be had; ``reason`` says why."""

    def __init__(self, owner: str, reason: str):
        self.reason = reason
        super().__init__(f"{owner}: {reason}: pass the served model's tokenizer (--tokenizer PATH_OR_HUB_ID)")


class _ServerTokenizer:
    """The server's /tokenize, each text asked once."""

    def __init__(self, request: Request):
        self.request = request
        self.memo: dict[tuple[bool, str], list[int]] = {}
        self.lock = threading.Lock()
        self._available: bool | None = None

    def available(self) -> bool:
        if self._available is None:
            try:
                self("")
                self._available = True
            except RuevalError:
                self._available = False
        return self._available

    def __call__(self, text: str, special: bool = False) -> list[int]:
        key = (special, text)
        with self.lock:
            if key in self.memo:
                return self.memo[key]
        answer = self.request("/tokenize", {"prompt": text, "add_special_tokens": special})
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, list):
            raise RuevalError(f"the server's /tokenize answered without tokens: {str(answer)[:200]}")
        with self.lock:
            self.memo[key] = tokens
        return tokens

    def start_token(self, owner: str) -> int:
        """The BOS the server adds itself, else the BOS or EOS its /tokenizer_info names."""
        added = self("", special=True)
        if added:
            return added[0]
        try:
            info = self.request("/tokenizer_info", None)
        except RuevalError:
            info = {}
        for name in ("bos_token", "eos_token"):
            token = info.get(name) if isinstance(info, dict) else None
            token = token.get("content") if isinstance(token, dict) else token
            if isinstance(token, str) and token and len(ids := self(token)) == 1:
                return ids[0]
        raise NoServedTokenizer(
            owner,
            "the server adds no start token and does not name its BOS or EOS (vLLM names them with "
            "--enable-tokenizer-info-endpoint)",
        )


def spec_tokenizer(spec: ModelSpec, options: ModelOptions) -> str:
    """The spec's tokenizer= key or --tokenizer (not both, unless they agree)."""
    key = spec.key("tokenizer")
    if key is not None and options.tokenizer not in (AUTO, key):
        raise RuevalError(f"-m {spec} and --tokenizer {options.tokenizer}: give the tokenizer once")
    return key or options.tokenizer
