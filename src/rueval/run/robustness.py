"""Robustness in a run and in `rueval perturb`: which perturbations, where the perturbed examples
come from (the data's episodes layout, or made here and semantically filtered), and their scores
and attack success rates per task (TAPE Table 4)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.files import write_jsonl, write_text
from rueval.data import DataSource, load_task_data, open_data
from rueval.robustness.attack import pair_with_originals, score_perturbation
from rueval.robustness.backends import DEFAULT_TRANSLATION_MODELS, EngineGenerator, Seq2SeqTranslator
from rueval.robustness.base import Perturbation
from rueval.robustness.model_based import AddSent, BackTranslation
from rueval.robustness.perturbations import PERTURBATIONS
from rueval.robustness.semantic_filter import BertScore, CharNgramSimilarity, Filtered, SemanticFilter
from rueval.robustness.targets import applies, protected_spans_batch
from rueval.run.predict import Predicted
from rueval.run.robustness_options import RobustnessOptions
from rueval.run.spec import RunSpec
from rueval.solvers import Setting
from rueval.tasks import Example, Task

# (name, originals, the originals' predictions per setting or None to predict them, pairs, source, filter)
Attack = tuple[str, list[Example], dict[Setting, list[Any]] | None, list[tuple[int, Example]], str, dict[str, Any]]


class Robustness:
    """The perturbations of a run, the semantic filter for the ones made here, and which were asked for."""

    def __init__(
        self,
        perturbations: Sequence[Perturbation],
        semantic_filter: SemanticFilter,
        requested: Sequence[str] | None = None,
    ):
        self.perturbations = list(perturbations)
        self.semantic_filter = semantic_filter
        self.requested = None if requested is None else list(requested)  # None: every one available

    @classmethod
    def build(cls, options: RobustnessOptions, seed: int = 0) -> Robustness:
        """The perturbations and filter of ``options``, seeded by the run's seed (models load on first use)."""
        perturbations: list[Perturbation] = []
        for name, rate in options.perturbations:
            kind = PERTURBATIONS[name]
            if kind is BackTranslation:
                to_english, to_russian = options.translation_models or DEFAULT_TRANSLATION_MODELS
                translators = Seq2SeqTranslator(to_english), Seq2SeqTranslator(to_russian)
                perturbations.append(BackTranslation(*translators, rate, seed))
            elif kind is AddSent:
                if options.addsent_model is None:  # a run.json's options are not checked for it as --perturb's are
                    raise RuevalError(f"{name} needs --addsent-model: a language model, hf:PATH_OR_HUB_ID")
                generator = EngineGenerator(options.addsent_model, seed, base_url=options.base_url)
                perturbations.append(AddSent(generator, rate, seed))
            else:
                perturbations.append(kind(rate, seed))
        similarity = BertScore(options.filter_model) if options.filter_model else CharNgramSimilarity()
        semantic_filter = SemanticFilter(similarity, options.filter_threshold, options.filter_min_share)
        return cls(perturbations, semantic_filter, options.requested)

    def generate(
        self, task: Task, examples: Sequence[Example], file: str, perturbations: Sequence[Perturbation] | None = None
    ) -> dict[str, Filtered]:
        """Each perturbation (by default all of the run's) of the examples from ``file``, semantically filtered."""
        protected = protected_spans_batch(task, examples, file)
        chosen = [p for p in perturbations or self.perturbations if applies(task, p.name)]
        return {p.name: self.semantic_filter.apply(task, examples, p, protected) for p in chosen}

    def evaluate(
        self, source: DataSource, task: Task, predicted: Predicted, limit: int | None = None
    ) -> dict[str, dict[str, Any]]:
        """Per perturbation: metrics, score, ASR and n, as results.json stores them, for the run's first
        few-shot setting, and under ``settings`` for each k and episode when there are several (TAPE
        Table 4 reports every one).

        Perturbed copies in the data (TAPE's episodes layout) are used when there are any; the
        perturbations named but missing there, or all when the data has none, are made here. All
        perturbed sets, in every setting, are predicted in one call (pooled for a language model).
        """
        split = predicted.data.eval
        settings = list(predicted.by_setting)
        stored = source.load_perturbed(task, split.name, limit)
        attacks: list[Attack] = []
        if stored is not None:
            same_file = stored.file == split.file
            originals = split.examples if same_file else stored.originals
            for name, copies in stored.perturbed.items():
                if self.requested is None or name in self.requested:
                    pairs = pair_with_originals(task, originals, copies, name, stored.file, strict=limit is None)
                    attacks.append((name, originals, predicted.by_setting if same_file else None, pairs, "data", {}))
        done = {name for name, *_ in attacks}
        made_here = [p for p in self.perturbations if p.name not in done and (stored is None or self.requested)]
        if made_here:
            index = {example.key: i for i, example in enumerate(split.examples)}
            for name, filtered in self.generate(task, split.examples, split.file, made_here).items():
                pairs = [(index[kept.original.key], kept.perturbed) for kept in filtered.kept]
                attacks.append((name, split.examples, predicted.by_setting, pairs, "generated", filtered.summary()))
        jobs = [
            (examples, setting)
            for _, originals, known, pairs, _, _ in attacks
            for examples in ([[e for _, e in pairs]] + ([] if known is not None else [originals]))
            for setting in settings
        ]
        answers = iter(predicted.predictor(jobs) if jobs else [])
        results: dict[str, dict[str, Any]] = {}
        for name, originals, known, pairs, origin, summary in attacks:
            perturbed_predictions = {setting: next(answers) for setting in settings}
            original_predictions = known if known is not None else {setting: next(answers) for setting in settings}
            scored = [
                score_perturbation(task, originals, original_predictions[s], pairs, perturbed_predictions[s]).to_json()
                for s in settings
            ]
            results[name] = {**scored[0], "source": origin, **({"filter": summary} if summary else {})}
            if len(settings) > 1:
                results[name]["settings"] = [
                    {"k": s.k, "episode": s.episode, **each} for s, each in zip(settings, scored, strict=True)
                ]
        return results


def write_attack_sets(spec: RunSpec, out: Path) -> dict[str, dict[str, int]]:
    """Write OUT/<task folder>/<split>.jsonl in TAPE's episodes layout: the original records
    marked ``"perturbation": <task name>``, then each perturbation's filtered copies marked with
    its name and carrying their original's idx; the train split is copied beside it, so OUT is a
    complete --data directory. Returns the number of records per task and perturbation."""
    tasks, robustness = spec.task_list, Robustness.build(spec.robustness or RobustnessOptions.parse(), spec.seed)
    nested = [task.name for task in tasks if task.nested]  # perturbed on the fly only
    if nested:
        raise RuevalError(
            f"{', '.join(nested)}: several examples per record, so no perturbed files are written; "
            "use rueval run --perturb"
        )
    source = open_data(spec.data, spec.read_limits, spec.tape_set)
    limit = None if spec.limit is None else int(spec.limit)  # perturb's --limit: a whole number of records
    loaded = [(task, load_task_data(source, task, spec.split, limit)) for task in tasks]  # all data checked first
    counts: dict[str, dict[str, int]] = {}
    for task, task_data in loaded:
        examples = task_data.eval.examples
        records = [_record(example, task.name) for example in examples]
        counts[task.name] = {"original": len(records)}
        for name, filtered in robustness.generate(task, examples, task_data.eval.file).items():
            records += [_record(kept.perturbed, name, kept.original) for kept in filtered.kept]
            counts[task.name][name] = len(filtered.kept)
        folder = out / task.folder
        write_jsonl(folder / f"{task_data.eval.name}.jsonl", records)
        train = source.split_file(task, "train")
        if train is not None:
            write_text(folder / "train.jsonl", train.read_bytes().decode("utf-8-sig"))
    return counts


def _record(example: Example, marker: str, original: Example | None = None) -> dict[str, Any]:
    """A record in the episodes layout; an explicit idx so copies find their original by it."""
    idx = {} if "idx" in example.fields else {"idx": (original or example).idx}
    return {**example.fields, **idx, "perturbation": marker}
