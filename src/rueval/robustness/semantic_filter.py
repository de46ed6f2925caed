"""Semantic filtering of perturbed examples (TAPE, Section 4.2.2, after Wang et al., 2021), as
TAPE's framework runs it (RussianNLP/rutransform, Transformer._filter_candidates and the
transformers' _apply_transformation).

Each example is perturbed into 3 candidates (1 for the model-based perturbations, as TAPE's
framework draws them), each compared with its original: the closest that reaches the similarity
threshold is kept. Where none does, the example is perturbed again at half the rate, at most three
times while the rate stays above 0.01 (for the perturbations that have a rate to lower: not
back-translation or AddSent). An example that never passes keeps its original text: it stays in
the perturbed set, unchanged, and the share of such examples is reported beside the scores
(rueval.robustness.attack), so a perturbation that changed nothing does not pass for a robust
model. Similarity is BERTScore F1 at 0.8 (TAPE's) with the encoder given by ``--filter-model``, by
default TAPE's bert-base-multilingual-cased when it is in the local Hugging Face cache (nothing
is downloaded), and otherwise the cosine of character 3-gram vectors at 0.6, with a note saying so
(``choose_similarity``). rueval can also lower the threshold until a share of the examples passes
(``min_share``, off by default: TAPE does not).
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from rueval.core.errors import RuevalError
from rueval.core.progress import progress
from rueval.robustness.base import Perturbation
from rueval.robustness.constraints import Protected
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
    """BERTScore F1 (Zhang et al., 2019) by the bert_score package, as TAPE's framework scores
    (BERTScorer without idf or baseline rescaling): token embeddings from the layer bert_score's
    table gives the encoder (layer 9 of bert-base-multilingual-cased, TAPE's), or ``layer``, or the
    last layer of an encoder the table does not list."""

    default_threshold = 0.8  # TAPE's (rutransform's similarity_threshold)

    def __init__(self, model: str, layer: int | None = None, batch_size: int = 16, device: str = "cpu"):
        self.model_name, self.batch_size, self.device = model, batch_size, device
        self.layer = table_layer(model) if layer is None else layer
        self.name = f"bertscore:{model}@" + ("last" if self.layer is None else f"layer{self.layer}")
        self._scorer = None

    def _load(self):
        if self._scorer is None:
            from bert_score import BERTScorer

            try:
                layer = self.layer or _layer_count(self.model_name)
                self._scorer = BERTScorer(self.model_name, layer, self.batch_size, device=self.device)
            except (OSError, ValueError) as e:
                raise RuevalError(f"--filter-model {self.model_name}: cannot load it ({e})") from None
        return self._scorer

    def score(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[float]:
        if len(originals) != len(perturbed):
            raise ValueError(f"{len(originals)} originals for {len(perturbed)} perturbed texts")
        if not originals:
            return []
        _, _, f1 = self._load().score(list(perturbed), list(originals))
        return f1.tolist()


TAPE_ENCODER = "bert-base-multilingual-cased"  # bert_score's model for Russian (BERTScorer(lang="ru"), TAPE's)
CHAR_NGRAM_NOTE = (
    f"semantic filter: character 3-gram similarity at {CharNgramSimilarity.default_threshold}, as BERTScore's "
    f"{TAPE_ENCODER} (TAPE's, at {BertScore.default_threshold}) is not at hand: give --filter-model to use it"
)


def choose_similarity(filter_model: str | None = None, cache_dir: str | None = None) -> tuple[Similarity, str | None]:
    """The filter's similarity: BERTScore with ``filter_model``, or with TAPE's encoder when bert-score
    is installed and the encoder is in the Hugging Face cache (``cache_dir``, by default the usual
    one); otherwise character 3-gram similarity, with a one-line note saying so."""
    if filter_model:
        return BertScore(filter_model), None
    if importlib.util.find_spec("bert_score") is not None:
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(TAPE_ENCODER, "config.json", cache_dir=cache_dir), str):
            return BertScore(TAPE_ENCODER), None
    return CharNgramSimilarity(), CHAR_NGRAM_NOTE


def table_layer(model: str) -> int | None:
    """The layer bert_score's table (bert_score.utils.model2layers) gives a hub model, by its name
    with or without the organisation ("google-bert/bert-base-multilingual-cased" reads as the
    table's "bert-base-multilingual-cased"); None for a model it does not list."""
    try:
        from bert_score.utils import model2layers
    except ImportError:
        raise RuevalError("--filter-model needs the bert-score package: pip install 'rueval[filter]'") from None
    return model2layers.get(model, model2layers.get(model.rstrip("/").rsplit("/", 1)[-1]))


def _layer_count(model: str) -> int:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model).num_hidden_layers


@dataclass(frozen=True)
class Kept:
    """An example of the perturbed set: its perturbed text that passed, or its original."""

    original: Example
    perturbed: Example  # the original itself when no attempt passed
    similarity: float  # of the attempt kept; 1 for an original
    rate: float  # the rate the attempt was made at; 0 for an original

    @property
    def changed(self) -> bool:
        return self.perturbed is not self.original


@dataclass
class Filtered:
    """One perturbation's filtered output on one task: every example, perturbed or original."""

    kept: list[Kept]  # one per example, in input order
    threshold: float  # the similarity threshold finally applied
    perturbable: int  # examples the perturbation could change at all

    @property
    def changed(self) -> int:
        return sum(k.changed for k in self.kept)

    def summary(self) -> dict[str, float | int]:
        return {
            "threshold": round(self.threshold, 4),
            "total": len(self.kept),
            "perturbable": self.perturbable,
            "changed": self.changed,
        }


@dataclass
class SemanticFilter:
    """Keep perturbed examples close enough to their originals (see the module docstring)."""

    similarity: Similarity = field(default_factory=CharNgramSimilarity)
    threshold: float | None = None  # None: the similarity's default
    min_share: float = 0.0  # rueval's option: lower the threshold until this share of perturbable examples pass
    candidates: int = 3  # TAPE's: candidates drawn per example and attempt (1 for model-based perturbations)
    halvings: int = 3  # TAPE's: the rate is halved at most three times
    min_rate: float = 0.01  # TAPE's: and only while it stays above this
    threshold_step: float = 0.05

    def __post_init__(self) -> None:
        if self.threshold is None:
            self.threshold = self.similarity.default_threshold
        if not 0 <= self.threshold <= 1 or not 0 <= self.min_share <= 1:
            raise RuevalError("the semantic filter's threshold and minimum share must lie between 0 and 1")
        if self.halvings < 0 or self.threshold_step <= 0 or self.candidates < 1:
            raise RuevalError(
                "the semantic filter needs a candidate or more, a non-negative number of halvings "
                "and a positive threshold step"
            )

    def rates(self, perturbation: Perturbation) -> list[float]:
        """The rates tried in turn: p, then p/2, p/4, ... while above ``min_rate``, ``halvings`` at most."""
        rates = [perturbation.rate]
        while perturbation.rate_lowered and len(rates) <= self.halvings and rates[-1] / 2 > self.min_rate:
            rates.append(rates[-1] / 2)
        return rates

    def apply(
        self, task: Task, examples: Sequence[Example], perturbation: Perturbation, protected: Sequence[Protected]
    ) -> Filtered:
        """Perturb ``examples``, halving the rate for those too far from their original; an example
        that never passes keeps its original text."""
        assert self.threshold is not None  # given, or the similarity's default since __post_init__
        target = target_for(task)
        best: dict[int, tuple[float, float, Example]] = {}  # example -> (similarity, rate, perturbed)
        passed: set[int] = set()
        pending = list(range(len(examples)))
        candidates = self.candidates if perturbation.needs_model is None else 1
        for rate in self.rates(perturbation):
            attempt = perturbation.with_rate(rate)
            for candidate in range(candidates):
                label = f"{perturbation.name} on {task.name} (p={rate:.3g}, candidate {candidate + 1}/{candidates})"
                batch = [examples[i] for i in progress(pending, label, total=len(pending))]
                rngs = [attempt.rng(task, example, candidate) for example in batch]
                outputs = attempt.perturb_batch(task, batch, rngs, [protected[i] for i in pending])
                changed = [(i, out) for i, out in zip(pending, outputs, strict=True) if out is not None]
                scores = self.similarity.score(
                    [_joined(target.fields, examples[i]) for i, _ in changed],
                    [_joined(target.fields, out) for _, out in changed],
                )
                for (i, out), score in zip(changed, scores, strict=True):
                    if i not in best or score > best[i][0]:  # the closest candidate of the attempts so far
                        best[i] = (score, rate, out)
                    if score >= self.threshold:
                        passed.add(i)
            pending = [i for i in pending if i not in passed]  # retried at a lower rate: none passed
            if not pending:
                break
        threshold, lowered = self.threshold, 0
        while best and len(passed) < self.min_share * len(best) and threshold > 0:
            lowered += 1  # from the start each time: 0.9 less 0.05 four times over is 0.6999999999999998
            threshold = max(0.0, round(self.threshold - lowered * self.threshold_step, 9))
            passed |= {i for i, (score, _, _) in best.items() if score >= threshold}
        kept = [
            Kept(example, best[i][2], best[i][0], best[i][1]) if i in passed else Kept(example, example, 1.0, 0.0)
            for i, example in enumerate(examples)
        ]
        return Filtered(kept, threshold, len(best))


def _joined(fields: Sequence[str], example: Example) -> str:
    return "\n".join(example.fields[f] for f in fields)
