"""The models behind the model-based perturbations: a transformers seq2seq translator for
BackTranslation, and for AddSent a rueval language model sampled through the LM engine. Both
are plain callables over a batch of texts, so a test can stand in a function for either."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from rueval.core.errors import RuevalError
from rueval.models.factory import ModelOptions, ModelSpec, open_engine

if TYPE_CHECKING:
    from rueval.models.engine import Engine

DEFAULT_TRANSLATION_MODELS = ("Helsinki-NLP/opus-mt-ru-en", "Helsinki-NLP/opus-mt-en-ru")  # TAPE's OPUS-MT


def _load(option: str, name: str, model_class: str):
    """A tokenizer and model by hub name or local path; a one-line RuevalError if that fails."""
    import transformers

    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
        model = getattr(transformers, model_class).from_pretrained(name).eval()
    except (OSError, ValueError, ImportError) as e:
        message = " ".join(str(e).split())[:300]
        raise RuevalError(f"{option} {name}: cannot load it ({type(e).__name__}: {message})") from None
    return tokenizer, model


class Seq2SeqTranslator:
    """Translation with a transformers seq2seq model (e.g. OPUS-MT) by its own generation settings
    (OPUS-MT's beam search), as TAPE's framework calls it; batched, loaded on first use."""

    def __init__(
        self, model: str, batch_size: int = 16, max_new_tokens: int = 256, option: str = "--translation-model"
    ):
        self.model_name, self.batch_size, self.max_new_tokens, self.option = model, batch_size, max_new_tokens, option
        self._tokenizer: Any = None  # transformers' objects, loaded on first use
        self._model: Any = None

    def __call__(self, texts: Sequence[str]) -> list[str]:
        import torch

        if self._model is None:
            self._tokenizer, self._model = _load(self.option, self.model_name, "AutoModelForSeq2SeqLM")
        translated: list[str] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            batch = self._tokenizer(chunk, return_tensors="pt", padding=True, truncation=True)
            batch.pop("token_type_ids", None)
            with torch.no_grad():
                output = self._model.generate(**batch, max_new_tokens=self.max_new_tokens)
            translated += self._tokenizer.batch_decode(output, skip_special_tokens=True)
        return translated


class EngineGenerator:
    """AddSent's continuations from a rueval language model (``hf:PATH_OR_HUB_ID``, a bare name or
    path meaning hf:, or ``openai:MODEL`` served at ``base_url``), through the LM engine: nucleus
    sampling seeded by the prompts and the seed, so the same prompts give the same continuations,
    and the request cache keeps them."""

    def __init__(
        self, model: str, seed: int = 0, top_p: float = 0.9, max_new_tokens: int = 40, base_url: str | None = None
    ):
        self.model = ModelSpec.parse(model if ModelSpec.is_lm(model) else f"hf:{model}")
        self.seed, self.top_p, self.max_new_tokens, self.base_url = seed, top_p, max_new_tokens, base_url
        self._engine: Engine | None = None

    def __call__(self, prompts: Sequence[str]) -> list[str]:
        from rueval.models.base import Generation

        if self._engine is None:  # loaded on first use, like the translator
            self._engine = open_engine(self.model, ModelOptions(base_url=self.base_url))
        sampled = partial(Generation, top_p=self.top_p, temperature=1.0, seed=self.seed)
        requests = [sampled(prompt, self.max_new_tokens) for prompt in prompts]
        return self._engine.generate(requests, "add_sent distractors")
