"""--perturb and its options, resolved into one frozen value of the run's spec: the perturbations
with their rates, the semantic filter, the models behind the model-based perturbations."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.option_fields import option
from rueval.results.checks import Checker
from rueval.robustness.backends import DEFAULT_TRANSLATION_MODELS
from rueval.robustness.model_based import AddSent, BackTranslation
from rueval.robustness.perturbations import PERTURBATIONS
from rueval.robustness.semantic_filter import CHAR_NGRAM_NOTE, CharNgramSimilarity, choose_similarity
from rueval.robustness.targets import not_applied_notes

ALL = "all"


@dataclass(frozen=True)
class RobustnessOptions:
    """--perturb and the options of the models and filter behind it, resolved: each perturbation the
    run makes, with its rate; the semantic filter's similarity and threshold; the models that
    back-translate and write AddSent's distractors."""

    perturbations: tuple[tuple[str, float], ...] = option(  # (name, rate) in PERTURBATIONS' order
        help="The perturbations --perturb names, with their rates."
    )
    requested: tuple[str, ...] | None = option(  # None: all (the data's perturbed copies too)
        None, help="The perturbations named, or all."
    )
    filter_model: str | None = option(  # None: character 3-gram similarity, offline
        None,
        help="Semantic filter: BERTScore with this encoder. Default: TAPE's bert-base-multilingual-cased when it "
        "is in the Hugging Face cache, else character 3-gram similarity.",
    )
    filter_threshold: float = option(
        CharNgramSimilarity.default_threshold,
        help="Semantic filter: least similarity. Default 0.6 (BERTScore 0.8, TAPE's).",
    )
    filter_min_share: float = option(
        0.0, help="Semantic filter: lower the threshold until this share passes (TAPE: 0)."
    )
    translation_models: tuple[str, ...] | None = option(  # back_translation's RU->EN and EN->RU models
        None,
        help="back_translation: RU_EN,EN_RU seq2seq models (default Helsinki-NLP opus-mt).",
        set_by=("translation_model",),
    )
    addsent_model: str | None = option(None, help="add_sent: a transformers causal LM, name or path.")
    base_url: str | None = option(  # the server of an openai: AddSent model
        None,
        help="openai: models (-m, --addsent-model): the server, e.g. http://localhost:8000/v1; "
        "several comma-separated, or @FILE with one URL a line.",
    )

    def __post_init__(self) -> None:
        for name, rate in self.perturbations:
            if name not in PERTURBATIONS:
                raise RuevalError(f"unknown perturbation '{name}'; expected all or some of: {', '.join(PERTURBATIONS)}")
            if not 0 <= rate <= 1:
                raise RuevalError(f"{name}: rate {rate} is not between 0 and 1")
        if not 0 <= self.filter_threshold <= 1 or not 0 <= self.filter_min_share <= 1:
            raise RuevalError("the semantic filter's threshold and minimum share must lie between 0 and 1")

    @classmethod
    def parse(
        cls,
        spec: str = ALL,
        filter_model: str | None = None,
        translation_model: str | None = None,
        addsent_model: str | None = None,
        filter_threshold: float | None = None,
        filter_min_share: float = 0.0,
        base_url: str | None = None,
    ) -> RobustnessOptions:
        """``--perturb all|NAME[:RATE],...`` and its options. In ``all`` the model-based perturbations come
        only with their model option; named explicitly, BackTranslation falls back to OPUS-MT."""
        rates = _parse_spec(spec)
        chosen = []
        for name, kind in PERTURBATIONS.items():
            if rates is not None and name not in rates:
                continue
            if kind is BackTranslation and rates is None and translation_model is None:
                continue
            if kind is AddSent and addsent_model is None:
                if rates is not None:
                    raise RuevalError(f"{name} needs --addsent-model: a language model, hf:PATH_OR_HUB_ID")
                continue
            rate = None if rates is None else rates[name]
            chosen.append((name, kind.default_rate if rate is None else rate))
        names = [name for name, _ in chosen]
        translation = _translation_models(translation_model) if BackTranslation.name in names else None
        similarity, _ = choose_similarity(filter_model)  # TAPE's BERTScore when its encoder is at hand
        threshold = similarity.default_threshold if filter_threshold is None else filter_threshold
        return cls(
            tuple(chosen), None if rates is None else tuple(rates), getattr(similarity, "model_name", None),
            threshold, filter_min_share, translation, addsent_model, base_url,
        )  # fmt: skip

    def notes(self) -> list[str]:
        """What `all` left out, and the tasks a perturbation is not applied to (as in TAPE)."""
        names = [name for name, _ in self.perturbations]
        notes = []
        if self.requested is None and BackTranslation.name not in names:
            notes.append(f"{BackTranslation.name} not included: give --translation-model RU_EN,EN_RU to include it")
        if self.requested is None and AddSent.name not in names:
            notes.append(f"{AddSent.name} not included: give --addsent-model MODEL to include it")
        filtered = [] if self.filter_model else [CHAR_NGRAM_NOTE]
        return notes + not_applied_notes(names) + filtered

    def to_json(self, seed: int) -> dict[str, Any]:
        """As JSON, each perturbation with the run's ``seed`` (it seeds them all)."""
        data = asdict(self)
        data["perturbations"] = [{"name": name, "rate": rate, "seed": seed} for name, rate in self.perturbations]
        data["requested"] = ALL if self.requested is None else list(self.requested)
        return data

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str) -> RobustnessOptions:
        data = dict(check.obj(data, at.rstrip(".")))
        perturbations = []
        for i, item in enumerate(check.typed(list, data.pop("perturbations", []), f"{at}perturbations")):
            where = f"{at}perturbations[{i}]"
            item = check.obj(item, where)
            name = check.text(check.required(item, "name", f"{where}."), f"{where}.name")
            perturbations.append((name, check.number(check.required(item, "rate", f"{where}."), f"{where}.rate")))
        if data.get("requested") == ALL:
            data["requested"] = None
        return check.fields(cls, data, at, {"perturbations": tuple(perturbations)})


def _parse_spec(spec: str) -> dict[str, float | None] | None:
    """``all`` -> None; ``butter_fingers,change_char_case:0.5`` -> {name: rate or None}."""
    if spec.strip().lower() == ALL:
        return None
    rates: dict[str, float | None] = {}
    for item in filter(None, (part.strip().lower() for part in spec.split(","))):
        name, _, rate = item.partition(":")
        if name == ALL:
            raise RuevalError(f"--perturb {spec}: all takes no rate; give NAME:RATE for each perturbation to rate")
        if name not in PERTURBATIONS:
            raise RuevalError(f"unknown perturbation '{name}'; expected all or some of: {', '.join(PERTURBATIONS)}")
        try:
            rates[name] = float(rate) if rate else None
        except ValueError:
            raise RuevalError(f"{item}: the rate after ':' must be a number") from None
    if not rates:
        raise RuevalError("name at least one perturbation, or all")
    return rates


def _translation_models(option: str | None) -> tuple[str, str]:
    if option is None:
        return DEFAULT_TRANSLATION_MODELS
    names = [name.strip() for name in option.split(",") if name.strip()]
    if len(names) != 2:
        raise RuevalError("--translation-model: give two models, Russian->English and English->Russian, with a comma")
    return names[0], names[1]
