"""What `openai:` must give for text prompts (``tokenizer="text"``), computed with plain transformers:
the server tokenizes context + continuation itself, with no start token; PAIRS are requests whose
token boundaries test the character-boundary rule (rueval.models.backends.openai)."""

from __future__ import annotations

import torch

from rueval.models.base import Loglikelihood

PAIRS = [
    Loglikelihood("Кошка сидит на", " окне"),
    Loglikelihood("Вопрос: сколько будет два плюс два? Ответ:", " четыре"),
    Loglikelihood("", "Мама мыла раму."),  # TAPE perplexity: the whole text
    Loglikelihood("Ответ: ", "да"),  # the token " д" straddles the boundary
    Loglikelihood("Смайлик", " 🙂 и всё"),  # the emoji is four byte tokens
    Loglikelihood("Смайлик", "🙂"),  # three of them have empty texts and start at the boundary
    Loglikelihood("Смайлик ", "🙂"),  # the trailing space is a token of its own: it is scored
    Loglikelihood("Он сказал 🙂", " и ушёл"),
]


def reference(model, ids: list[int], first: int) -> tuple[float, int, bool]:
    """Sum of log P(ids[i] | ids[:i]) for i >= first, one unbatched forward."""
    with torch.no_grad():
        logprobs = model(torch.tensor([ids])).logits[0].log_softmax(-1)
    targets = torch.tensor(ids[first:])
    rows = logprobs[first - 1 : len(ids) - 1]
    return float(rows.gather(1, targets[:, None]).sum()), len(targets), bool((rows.argmax(-1) == targets).all())


def text_reference(plain, request: Loglikelihood) -> tuple[float, int, bool]:
    """What text prompts must give: the server tokenizes context + continuation with no start
    token; the continuation's tokens are those after the (space-stripped) context's tokens,
    and with an empty context the first token, which nothing predicts, is left out."""
    model, tokenizer = plain
    ids = tokenizer(request.context + request.continuation)["input_ids"]
    context_ids = tokenizer(request.context.rstrip())["input_ids"] if request.context else []
    assert ids[: len(context_ids)] == context_ids  # the pairs keep the context's tokens intact
    return reference(model, ids, max(1, len(context_ids)))
