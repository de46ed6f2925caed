"""Reference-free membership scores of one text, from its tokens' log-probabilities (TokenLogprobsResult).

Each score is oriented as its paper reports it; ``MEMBER_SIGN`` turns it so that higher means "more like a
text the model was trained on", which the verdict's test and the AUROC read.

- Min-K% Prob (Shi et al., 2023): the mean of the lowest k% of the token log-probabilities (k = 20% by
  default; at least one token). Higher: member.
- Min-K%++ (Zhang et al., 2024): each token's log-probability standardised by its position's next-token
  distribution, (log p(x_t) - mu_t) / sigma_t with mu_t = sum_v p(v) log p(v) and
  sigma_t^2 = sum_v p(v) (log p(v))^2 - mu_t^2, then the mean of the lowest k% of them. Higher: member.
- Perplexity: exp of the mean negative log-probability per token. Lower: member.
- zlib ratio (Carlini et al., 2021): the log-perplexity (the mean negative log-probability per token, in
  nats) divided by the length in bytes of the text's UTF-8 zlib-compressed at zlib's default level.
  Lower: member.
- Perturbation: the mean log-probability per token of the text minus that of its perturbed twin (how much
  the likelihood drops when the exact wording is lost). Higher: member.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

DEFAULT_K = 0.2
SCORES = ("min_k", "min_k_pp", "zlib", "ppl", "perturbation")
MEMBER_SIGN = {"min_k": 1, "min_k_pp": 1, "zlib": -1, "ppl": -1, "perturbation": 1}


def lowest_mean(values: Sequence[float], k: float) -> float:
    """The mean of the lowest ``k`` share of ``values`` (int(n * k) of them, at least one)."""
    if not 0 < k <= 1:
        raise ValueError(f"k={k}: expected a share in (0, 1]")
    count = max(1, int(len(values) * k))
    return float(np.mean(np.sort(np.asarray(values, dtype=np.float64))[:count]))


def min_k(logprobs: Sequence[float], k: float = DEFAULT_K) -> float:
    return lowest_mean(logprobs, k)


def min_k_pp(
    logprobs: Sequence[float], means: Sequence[float], deviations: Sequence[float], k: float = DEFAULT_K
) -> float:
    """Min-K%++; a position whose distribution has no spread (sigma 0) is left out (its standardised value
    is undefined), and a text with no other position scores NaN."""
    values, mu, sigma = (np.asarray(column, dtype=np.float64) for column in (logprobs, means, deviations))
    spread = sigma > 0
    if not spread.any():
        return math.nan
    return lowest_mean(((values - mu)[spread] / sigma[spread]).tolist(), k)


def mean_logprob(logprobs: Sequence[float]) -> float:
    return float(np.mean(np.asarray(logprobs, dtype=np.float64)))


def perplexity(logprobs: Sequence[float]) -> float:
    return math.exp(-mean_logprob(logprobs))


def zlib_ratio(logprobs: Sequence[float], text: str) -> float:
    return -mean_logprob(logprobs) / len(zlib.compress(text.encode("utf-8")))


def perturbation(logprobs: Sequence[float], twin_logprobs: Sequence[float]) -> float:
    return mean_logprob(logprobs) - mean_logprob(twin_logprobs)
