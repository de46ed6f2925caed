"""Generation requests that every backend must cut alike, and the tie rule's count of how two backends'
greedy texts differ: for tests/models/test_vllm_*.py, test_hf_speed.py and benchmarks/bench_generation_backends.py.

The cases of a prompt are built from `hf:`'s greedy text without stops (``free``): the whole budget, budgets
of 1 and 3 tokens (reached), a stop that never occurs, the end-of-text token's text as a stop (generation
ends at the token itself; its text is never in a decoded answer), a three-character stop from the text's
middle, a stop spanning two of its tokens, and a stop that begins in the prompt (matched in the generated
text alone, it cuts nowhere near where it begins)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rueval.models.backends.tiny import EOS, sample_texts
from rueval.models.base import Generation, cut_at_stop

NEVER = "§никогда§"  # no bundled text holds it
BUDGET = 24


def prompts(n: int, start: int = 0) -> list[str]:
    """n distinct prompts: the first half, cut at a space, of the bundled sample texts of 40 characters or more."""
    found: dict[str, None] = {}
    for text in sample_texts():
        if len(text) >= 40:
            found[text[: text.rfind(" ", 0, len(text) // 2) + 1 or len(text) // 2].rstrip()] = None
    chosen = list(found)[start : start + n]
    assert len(chosen) == n, f"only {len(chosen)} prompts from the bundled samples"
    return chosen


def long_prompt(characters: int = 16_000) -> str:
    """The bundled sample texts joined, cut to ``characters``: several thousand tokens, more than a 2,048
    window holds (its oldest tokens are cut to leave room for the new ones)."""
    return " ".join(sample_texts())[:characters].rstrip()


def byte_prompt(hf, budget: int = 3, tries: int = 400) -> str | None:
    """A prompt (half a bundled sample text) whose greedy tokens at ``budget`` end in bytes of no complete
    character (plain transformers' greedy tokens, decoded as they are: ending in U+FFFD), or None."""
    import torch

    for text in sample_texts()[:tries]:
        prompt = text[: len(text) // 2]
        ids = torch.tensor([[hf.start_token, *hf._tokens(prompt)]], device=hf.device)
        with torch.inference_mode():
            out = hf.model.generate(ids, max_new_tokens=budget, do_sample=False, pad_token_id=hf.start_token)
        if prompt and hf.tokenizer.decode(out[0, ids.shape[1] :]).endswith("\ufffd"):
            return prompt
    return None


def greedy(prompt: str, budget: int = BUDGET, stop: tuple[str, ...] = ()) -> Generation:
    return Generation(prompt, budget, stop=stop)


def cut_cases(prompt: str, free: str, tokenizer) -> list[Generation]:
    """The requests on ``prompt`` built from ``free``, its greedy text at BUDGET tokens without stops."""
    cases = [greedy(prompt), greedy(prompt, 1), greedy(prompt, 3), greedy(prompt, stop=(NEVER,))]
    cases.append(greedy(prompt, stop=(EOS,)))
    if len(free) >= 6:
        middle = len(free) // 2
        cases.append(greedy(prompt, stop=(NEVER, free[middle : middle + 3])))
        cases.append(greedy(prompt, stop=(prompt[-1] + free[:2],)))
    pieces = [tokenizer.decode([i]) for i in tokenizer(free, add_special_tokens=False)["input_ids"]]
    for left, right in zip(pieces, pieces[1:], strict=False):
        if left and right and "\ufffd" not in left + right:
            cases.append(greedy(prompt, stop=(left[-2:] + right[:2],)))
            break
    return cases


@dataclass(frozen=True)
class Cases:
    """The cut cases of some prompts and the texts `hf:` gives them one prompt at a time (the reference)."""

    hf: Any  # an HFCausalLM with batch_size=1
    requests: list[Generation]
    texts: list[str]

    @classmethod
    def of(cls, hf, prompts: list[str]) -> Cases:
        free = hf.generate([greedy(p) for p in prompts])
        cases = (r for p, text in zip(prompts, free, strict=True) for r in cut_cases(p, text, hf.tokenizer))
        requests = list(dict.fromkeys(cases))
        return cls(hf, requests, hf.generate(requests))

    def ended_early(self) -> int:
        """How many of `hf:`'s stop-free texts at BUDGET ended at the end-of-text token: those that
        retokenize to under half the budget's tokens."""
        return sum(
            not r.stop and r.max_new_tokens == BUDGET and len(self.hf.tokenizer(t)["input_ids"]) < BUDGET // 2
            for r, t in zip(self.requests, self.texts, strict=True)
        )

    def agreement(self, texts: list[str]) -> Agreement:
        """How another backend's (or mode's) texts differ from `hf:`'s, by the tie rule."""
        return agreement(self.hf, self.requests, self.texts, texts)


def cut_problems(requests: list[Generation], texts: list[str]) -> list[str]:
    """Where one backend's texts are not cut alike: a request with stops whose text is not the text of
    its prompt and budget without stops cut at its first stop, or a smaller budget's text that does not
    start the larger one's."""
    free = {(r.prompt, r.max_new_tokens): text for r, text in zip(requests, texts, strict=True) if not r.stop}
    problems = []
    for request, text in zip(requests, texts, strict=True):
        expected = cut_at_stop(free[(request.prompt, request.max_new_tokens)], request.stop)
        if text != expected:
            problems.append(f"{request}: {text!r}, expected {expected!r}")
        longer = free[(request.prompt, BUDGET)]
        if not request.stop and not longer.startswith(text):
            problems.append(f"{request}: {text!r} does not start the {BUDGET}-token text {longer!r}")
    return problems


def save_requests(requests: list[Generation], path: Path) -> Path:
    path.write_text(json.dumps([asdict(r) for r in requests], ensure_ascii=False), encoding="utf-8")
    return path


def load_requests(path: Path) -> list[Generation]:
    return [Generation(**{**r, "stop": tuple(r["stop"])}) for r in json.loads(path.read_text(encoding="utf-8"))]


@dataclass
class Agreement:
    """Two backends' greedy texts on the same requests, by the tie rule: equal, different where the top two
    logits at the first divergent step are closer than greedy_ties.TIE (`hf:`, one prompt at a time), or
    really different."""

    equal: int = 0
    ties: int = 0
    real: list[tuple[Generation, float, str, str]] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.equal} equal, {self.ties} tie differences, {len(self.real)} real differences"


def agreement(model, requests: list[Generation], texts: list[str], others: list[str]) -> Agreement:
    """How ``others`` differ from ``texts`` (both greedy, on ``requests``), each difference weighed on
    ``model`` (an HFCausalLM) by rueval.models.backends.greedy_ties.first_divergence."""
    from rueval.models.backends.greedy_ties import TIE, first_divergence

    counted = Agreement()
    for request, text, other in zip(requests, texts, others, strict=True):
        gap = first_divergence(model, request, text, other)
        if gap is None:
            counted.equal += 1
        elif gap < TIE:
            counted.ties += 1
        else:
            counted.real.append((request, gap, text, other))
    return counted
