"""transformers models behind the model-based perturbations: a seq2seq translator for
BackTranslation and a sampling causal LM for AddSent. Both are plain callables over a batch of
texts, so any other backend (the LM engine's) can stand in for them."""

from __future__ import annotations

from collections.abc import Sequence

from rueval.errors import RuevalError

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
    """Greedy translation with a transformers seq2seq model (e.g. OPUS-MT), batched; loaded on first use."""

    def __init__(
        self, model: str, batch_size: int = 16, max_new_tokens: int = 256, option: str = "--translation-model"
    ):
        self.model_name, self.batch_size, self.max_new_tokens, self.option = model, batch_size, max_new_tokens, option
        self._tokenizer = self._model = None

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
                output = self._model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=self.max_new_tokens)
            translated += self._tokenizer.batch_decode(output, skip_special_tokens=True)
        return translated


class CausalLMGenerator:
    """Continuations sampled with top-p (nucleus) sampling from a transformers causal LM, batched
    with left padding; seeded on every call, so the same prompts give the same continuations."""

    def __init__(
        self,
        model: str,
        seed: int = 0,
        top_p: float = 0.9,
        max_new_tokens: int = 40,
        batch_size: int = 8,
        option: str = "--addsent-model",
    ):
        self.model_name, self.seed, self.top_p = model, seed, top_p
        self.max_new_tokens, self.batch_size, self.option = max_new_tokens, batch_size, option
        self._tokenizer = self._model = None

    def __call__(self, prompts: Sequence[str]) -> list[str]:
        import torch

        if self._model is None:
            self._tokenizer, self._model = _load(self.option, self.model_name, "AutoModelForCausalLM")
            self._tokenizer.padding_side = "left"
            if self._tokenizer.pad_token is None:
                self._tokenizer.pad_token = self._tokenizer.eos_token
        torch.manual_seed(self.seed)
        continuations: list[str] = []
        for start in range(0, len(prompts), self.batch_size):
            batch = self._tokenizer(list(prompts[start : start + self.batch_size]), return_tensors="pt", padding=True)
            batch.pop("token_type_ids", None)
            with torch.no_grad():
                output = self._model.generate(
                    **batch,
                    do_sample=True,
                    top_p=self.top_p,
                    top_k=0,
                    max_new_tokens=self.max_new_tokens,
                    pad_token_id=self._tokenizer.pad_token_id,
                )
            new_tokens = output[:, batch["input_ids"].shape[1] :]
            continuations += self._tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        return continuations
