"""Semantic filtering of perturbed examples (TAPE, Section 4.2.2, after Wang et al., 2021).

Each perturbed example is compared with its original. One below the similarity threshold is
perturbed again at a lower adversarial rate (p, then p x (k-1)/k, ..., p/k over k steps), as TAPE
does, and dropped if it never passes. If fewer than ``min_share`` of the examples pass, the
threshold itself is lowered step by step over each example's most similar attempt until enough
do. Similarity is BERTScore F1 with the encoder given by ``--filter-model``, or by default, with
no download, the cosine of character 3-gram vectors.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from rueval.errors import RuevalError
from rueval.progress import progress
from rueval.robustness.constraints import Protected
from rueval.robustness.perturbations import Perturbation
from rueval.robustness.targets import target_for
from rueval.tasks import Example, Task


class Similarity(ABC):
    """How close a perturbed text is to its original, in [0, 1] (1 = the same)."""

    name: str
    default_threshold: float  # below it a perturbed text counts as too far from its original

    @abstractmethod
    def score(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[float]: ...


class CharNgramSimilarity(Similarity):
    """Cosine of the two texts' character n-gram count vectors (scikit-learn), lower-cased, as case
    carries no meaning here. Computed per pair, so an example's score does not depend on which
    others are filtered with it."""

    default_threshold = 0.6  # at TAPE's rates about nine in ten bundled examples pass at the first try

    def __init__(self, n: int = 3):
        self.n = n
        self.name = f"char{n}gram"

    def score(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[float]:
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.preprocessing import normalize

        if len(originals) != len(perturbed):
            raise ValueError(f"{len(originals)} originals for {len(perturbed)} perturbed texts")
        if not originals:
            return []
        # One vocabulary for the batch: n-grams absent from a pair are zeros, which leave its cosine as it is.
        vectorizer = CountVectorizer(analyzer="char", ngram_range=(self.n, self.n))
        try:
            counts = vectorizer.fit_transform([*originals, *perturbed])
        except ValueError:  # every text is shorter than n characters
            return [float(a == b) for a, b in zip(originals, perturbed)]
        before, after = counts[: len(originals)], counts[len(originals) :]
        cosines = normalize(before).multiply(normalize(after)).sum(axis=1).A1
        too_short = (before.getnnz(axis=1) == 0) | (after.getnnz(axis=1) == 0)  # no n-gram: equal or not
        pairs = zip(originals, perturbed, cosines, too_short)
        return [float(a == b) if short else float(c) for a, b, c, short in pairs]


class BertScore(Similarity):
    """BERTScore F1 (Zhang et al., 2019): contextual token embeddings of the two texts, each token
    greedily matched to its most similar token of the other text by cosine; precision and recall
    are the mean best matches, F1 their harmonic mean. No idf weighting, no baseline rescaling.
    TAPE uses bert-base-multilingual-cased."""

    default_threshold = 0.85  # raw BERTScore F1 runs high: unrelated sentences often score 0.7

    def __init__(self, model: str, layer: int | None = None, batch_size: int = 16, device: str = "cpu"):
        self.model_name, self.layer, self.batch_size, self.device = model, layer, batch_size, device
        self.name = f"bertscore:{model}"
        self._model = self._tokenizer = None

    def _load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModel, AutoTokenizer

        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_name)
            self._model = AutoModel.from_pretrained(self.model_name).to(self.device).eval()
        except (OSError, ValueError) as e:
            raise RuevalError(f"--filter-model {self.model_name}: cannot load it ({e})") from None

    def _embed(self, texts: Sequence[str]):
        """Per text, its L2-normalised token embeddings without special tokens and padding."""
        import torch

        self._load()
        embedded = []
        for start in range(0, len(texts), self.batch_size):
            batch = self._tokenizer(
                list(texts[start : start + self.batch_size]),
                return_tensors="pt",
                padding=True,
                truncation=True,
                return_special_tokens_mask=True,
            )
            special = batch.pop("special_tokens_mask").bool()
            with torch.no_grad():
                output = self._model(**batch.to(self.device), output_hidden_states=self.layer is not None)
            hidden = output.last_hidden_state if self.layer is None else output.hidden_states[self.layer]
            keep = batch["attention_mask"].bool() & ~special
            for row, mask in zip(hidden, keep):
                embedded.append(torch.nn.functional.normalize(row[mask], dim=-1))
        return embedded

    def score(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[float]:
        scores = []
        for reference, candidate in zip(self._embed(originals), self._embed(perturbed), strict=True):
            if len(reference) == 0 or len(candidate) == 0:
                scores.append(float(len(reference) == len(candidate)))
                continue
            similarity = candidate @ reference.T
            precision = similarity.max(dim=1).values.mean().item()
            recall = similarity.max(dim=0).values.mean().item()
            scores.append(2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0)
        return scores


@dataclass(frozen=True)
class Kept:
    """A perturbed example that passed, with its similarity and the rate it was made at."""

    original: Example
    perturbed: Example
    similarity: float
    rate: float


@dataclass
class Filtered:
    """What the filter kept of one perturbation's output on one task."""

    kept: list[Kept]
    threshold: float  # the similarity threshold finally applied
    perturbable: int  # examples the perturbation could change at all
    total: int

    def summary(self) -> dict[str, float | int]:
        kept, threshold = len(self.kept), round(self.threshold, 4)
        return {"threshold": threshold, "kept": kept, "perturbable": self.perturbable, "total": self.total}


@dataclass
class SemanticFilter:
    """Keep perturbed examples close enough to their originals (see the module docstring)."""

    similarity: Similarity = field(default_factory=CharNgramSimilarity)
    threshold: float | None = None  # None: the similarity's default
    min_share: float = 0.8  # "enough": the share of perturbable examples that must pass
    rate_steps: int = 3
    threshold_step: float = 0.05

    def __post_init__(self) -> None:
        if self.threshold is None:
            self.threshold = self.similarity.default_threshold
        if not 0 <= self.threshold <= 1 or not 0 <= self.min_share <= 1:
            raise RuevalError("the semantic filter's threshold and minimum share must lie between 0 and 1")
        if self.rate_steps < 1 or self.threshold_step <= 0:
            raise RuevalError("the semantic filter needs at least one rate step and a positive threshold step")

    def describe(self) -> dict[str, float | str]:
        return {
            "similarity": self.similarity.name,
            "threshold": self.threshold,
            "min_share": self.min_share,
            "rate_steps": self.rate_steps,
        }

    def apply(
        self, task: Task, examples: Sequence[Example], perturbation: Perturbation, protected: Sequence[Protected]
    ) -> Filtered:
        """Perturb ``examples``, lowering the rate for those too far from their original, and keep
        the ones that pass (lowering the threshold if fewer than ``min_share`` pass)."""
        target = target_for(task)
        best: dict[int, tuple[float, float, Example]] = {}  # example -> (similarity, rate, perturbed)
        passed: set[int] = set()
        pending = list(range(len(examples)))
        for step in range(self.rate_steps):
            rate = perturbation.rate * (self.rate_steps - step) / self.rate_steps
            attempt = perturbation.with_rate(rate)
            batch = progress(pending, f"{perturbation.name} on {task.name} (p={rate:.2f})", total=len(pending))
            outputs = attempt.perturb_batch(task, [examples[i] for i in batch], None, [protected[i] for i in pending])
            changed = [(i, out) for i, out in zip(pending, outputs, strict=True) if out is not None]
            scores = self.similarity.score(
                [_joined(target.fields, examples[i]) for i, _ in changed],
                [_joined(target.fields, out) for _, out in changed],
            )
            for (i, out), score in zip(changed, scores, strict=True):
                if i not in best or score > best[i][0]:
                    best[i] = (score, rate, out)
                if score >= self.threshold:
                    passed.add(i)
            pending = [i for i in pending if i not in passed]
            if not pending or rate == 0:
                break
        threshold, lowered = self.threshold, 0
        while best and len(passed) < self.min_share * len(best) and threshold > 0:
            lowered += 1  # from the start each time: 0.9 less 0.05 four times over is 0.6999999999999998
            threshold = max(0.0, round(self.threshold - lowered * self.threshold_step, 9))
            passed |= {i for i, (score, _, _) in best.items() if score >= threshold}
        kept = [Kept(examples[i], best[i][2], best[i][0], best[i][1]) for i in sorted(passed)]
        return Filtered(kept, threshold, len(best), len(examples))


def _joined(fields: Sequence[str], example: Example) -> str:
    return "\n".join(example.fields[f] for f in fields)
