"""The tie rule for greedy texts that two ways of computing disagree on (batched and one-prompt-at-a-time
`hf:`, or `hf:` and vLLM): a greedy text may differ from the one-at-a-time text only where the model's top
two logits were within float rounding of each other, at the step where the texts part. ``first_divergence``
measures that gap, so a benchmark or a test can tell a tie from a bug."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rueval.models.backends.hf_generation import greedy_generate, prompt_ids
from rueval.models.base import Generation

if TYPE_CHECKING:
    from rueval.models.backends.hf import HFCausalLM

TIE = 1e-4  # logits closer than this may be ordered either way by another batch shape or kernel


def first_divergence(model: HFCausalLM, request: Generation, text_a: str, text_b: str) -> float | None:
    """None when the texts are equal; else the gap between the top two logits at the step of the
    one-prompt-at-a-time greedy generation whose token moves its text off the common start of the two
    texts (the step where they part; the smallest gap over the steps of a character split over tokens)."""
    if text_a == text_b:
        return None
    common = next((i for i, (a, b) in enumerate(zip(text_a, text_b, strict=False)) if a != b), None)
    common = min(len(text_a), len(text_b)) if common is None else common
    prompt = prompt_ids(model, request)
    out = greedy_generate(model, prompt, request.max_new_tokens, output_logits=True, return_dict_in_generate=True)
    tokens = out.sequences[0, len(prompt) :].tolist()
    shared = text_a[:common]
    texts = [model.tokenizer.decode(tokens[: step + 1], skip_special_tokens=True) for step in range(len(tokens))]
    parted = len(texts) - 1  # else the one-at-a-time text ended (its end token) where the other went on
    for step, text in enumerate(texts):
        if not shared.startswith(text.rstrip("\ufffd")) or len(text) > common:
            parted = step
            break
    # a token that ends between a character's bytes does not show where the texts part: the steps since the
    # last whole character are all candidates, and the rule asks for a tie at one of them
    first = parted
    while first > 0 and texts[first - 1].endswith("\ufffd"):
        first -= 1
    return min(_gap(out.logits[step]) for step in range(first, parted + 1))


def _gap(logits) -> float:
    top = logits[0].float().topk(2).values
    return float(top[0] - top[1])
