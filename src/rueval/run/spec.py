"""The run specification: every value that configures a run, typed and resolved, in one frozen
record. `rueval run`, `submit`, `perturb`, `--resume` and `rueval.evaluate` all build one; the
pipeline takes it; OUT/run.json saves it (``to_json`` / ``from_json``), and its fingerprint decides
which earlier results a run may reuse."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.data import DEFAULT_LIMITS, TAPE_SETS, ReadLimits, check_data_spec, is_mera_folder
from rueval.results.checks import Checker, read_json_file
from rueval.robustness.backends import DEFAULT_TRANSLATION_MODELS
from rueval.robustness.perturbations import PERTURBATIONS, AddSent, BackTranslation
from rueval.robustness.semantic_filter import CHAR_NGRAM_NOTE, CharNgramSimilarity, choose_similarity
from rueval.robustness.targets import not_applied_notes
from rueval.run.checks import check_limit, check_ranges, check_types, flag
from rueval.run.mera_settings import MeraSettings, with_mera
from rueval.run.predict import settings_of
from rueval.scoring.slices import check_slice_names, resolve_slices
from rueval.solvers import (
    FAMILIES,
    LANGUAGE_MODEL,
    Family,
    Setting,
    Solver,
    SolverOptions,
    family_of,
    solver_options,
)
from rueval.solvers.options import LMOptions, NoOptions
from rueval.tasks import Task, get_task, resolve_tasks
from rueval.tasks.include import include
from rueval.tasks.prompts import PROMPT_CHOICES, TaskPrompt, asked_prompts

# Bump with any change of a default or of how a number is computed (prompts, scoring, metrics,
# data reading): a task result saved under another protocol is never reused.
# 2: RCB F1 as jiant computes it on subsets, CheGeKa's empty alternative a gold answer, openai: sends token ids,
#    hf: generates one prompt at a time
# 3: MERA's files asked as the current MERA asks (MERA-Evaluation/MERA): zero-shot without "\nОтвет:" after
#    the RSG instructions, MERA's demonstrations and shot counts, greedy generation with its stop and token limit
PROTOCOL_VERSION = 3
# What a run records that no number depends on: which tasks it scores (each task's own fingerprint
# names it, and runs of the same settings share a directory), sample logs, the read limits, where
# YAML tasks were found (each YAML task's file enters its own fingerprint). A family's options say
# their own (rueval.solvers.options: UNSCORED).
UNSCORED = ("tasks", "log_samples", "max_line_bytes", "max_file_bytes", "max_lines", "max_blank_lines", "include_path")
SPLITS = ("val", "test")
ALL = "all"


@dataclass(frozen=True)
class RobustnessOptions:
    """--perturb and the options of the models and filter behind it, resolved: each perturbation the
    run makes, with its rate; the semantic filter's similarity and threshold; the models that
    back-translate and write AddSent's distractors."""

    perturbations: tuple[tuple[str, float], ...]  # (name, rate) in PERTURBATIONS' order
    requested: tuple[str, ...] | None = None  # the names given; None: all (the data's perturbed copies too)
    filter_model: str | None = None  # BERTScore's encoder; None: character 3-gram similarity, offline
    filter_threshold: float = CharNgramSimilarity.default_threshold
    filter_min_share: float = 0.0
    translation_models: tuple[str, ...] | None = None  # back_translation's RU->EN and EN->RU models
    addsent_model: str | None = None
    base_url: str | None = None  # the server of an openai: AddSent model

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


@dataclass(frozen=True)
class RunSpec:
    """What to run: the tasks and their data, the model with its family's options, the few-shot
    settings, robustness, slices, limit and seed, every value resolved (no "default" left to look up)."""

    tasks: tuple[str, ...]
    # -m: a solver's name, a model spec (hf:, openai:, finetune:), or the identity of an LM given in memory
    model: str = "majority"
    options: SolverOptions = NoOptions()  # the model's family's options (rueval.solvers.options)
    data: str | None = None  # an absolute path, "hf", or None for the bundled samples
    split: str | None = None  # None: test when it is labelled, else val
    tape_set: str = "episodes"
    max_line_bytes: int = DEFAULT_LIMITS.line_bytes  # each data file read within these (rueval.data.ReadLimits)
    max_file_bytes: int = DEFAULT_LIMITS.file_bytes
    max_lines: int = DEFAULT_LIMITS.lines
    max_blank_lines: int = DEFAULT_LIMITS.blank_lines
    shots: tuple[int, ...] = (0,)
    episodes: int = 1
    prompts: str = "default"  # --prompts: a language model asks with each task's default prompt, or all its paper ran
    robustness: RobustnessOptions | None = None
    slices: tuple[str, ...] = ()
    limit: int | float | None = None  # the first N records of each task, or below 1 that share of them
    seed: int = 0
    log_samples: bool = False
    include_path: tuple[str, ...] = ()  # folders of YAML task declarations (lm-eval's --include-path)
    predict_only: bool = False  # lm-eval's --predict_only: predictions, no scores
    mera: MeraSettings | None = None  # a language model on MERA's files: MERA's settings (rueval.run.mera_settings)

    def __post_init__(self) -> None:
        check_types(self)
        include(*self.include_path)  # YAML tasks are known by name from here on (a resumed run's too)
        if not self.tasks:
            raise RuevalError("name at least one task")
        for task in self.tasks:
            get_task(task)
        if not isinstance(self.options, self.family.options):
            raise RuevalError(f"{type(self.options).__name__}: not the options of {self.model} ({self.family.name})")
        if self.split not in (None, *SPLITS):
            raise RuevalError(f"--split {self.split}: expected one of {', '.join(SPLITS)}")
        if self.tape_set not in TAPE_SETS:
            raise RuevalError(f"--tape-set {self.tape_set}: expected one of {', '.join(TAPE_SETS)}")
        check_ranges(self.seed, self.shots, self.episodes)
        if set(self.shots) != {0} and not isinstance(self.options, LMOptions):
            raise RuevalError("--shots and --episodes need a language model (-m hf:... or -m openai:...)")
        self._check_prompts()
        if self.mera is not None and (self.episodes != 1 or not isinstance(self.options, LMOptions)):
            raise RuevalError(
                "MERA's settings are a language model's, and draw each item's demonstrations once: --episodes 1"
            )
        _ = self.read_limits  # each limit checked by ReadLimits
        check_limit(self.limit)
        check_slice_names(self.slices)

    def _check_prompts(self) -> None:
        if self.prompts not in PROMPT_CHOICES:
            raise RuevalError(f"--prompts {self.prompts}: expected one of {', '.join(PROMPT_CHOICES)}")
        if self.prompts == ALL and not isinstance(self.options, LMOptions):
            raise RuevalError(
                "--prompts all needs a language model (-m hf:... or -m openai:...): only they are prompted"
            )
        if self.prompts == ALL and self.predict_only:
            raise RuevalError("--prompts all scores the tasks under every prompt; --predict-only scores none")

    @classmethod
    def create(
        cls,
        tasks: str | Sequence[str],
        model: str = "majority",
        given: Mapping[str, Any] | None = None,
        *,
        spell: Callable[[str], str] = str,
        data: str | Path | None = None,
        limit: float | None = None,
        slices: str | Sequence[str] = (),
        shots: int | Sequence[int] | None = None,
        include_path: str | Path | Sequence[str | Path] = (),
        **values: Any,
    ) -> RunSpec:
        """A spec from a user's values: task and slice names resolved ("all", "rsg", ...), the model's
        options read from the options ``given`` by name (``spell`` writes a name as the user wrote it),
        the data's path made absolute (the run resumes from anywhere), the limit checked; a language
        model on MERA's files takes MERA's settings (``shots`` not given: MERA's numbers too). Other
        ``values`` are fields as they are (``options=`` instead of ``given`` for options made already)."""
        if not isinstance(model, str):
            raise RuevalError(f"--model: expected a model's name or spec, got {model!r:.40}")
        if data is not None:
            check_data_spec(data)
        if "options" not in values:
            values["options"] = solver_options(model, given or {}, values.get("seed", 0), spell)
        folders = tuple(_absolute_folders(_names(include_path, "include_path", str | Path)))
        include(*folders)  # before the task names are resolved: they may name YAML tasks
        names = tuple(task.name for task in resolve_tasks(",".join(_names(tasks, "tasks"))))
        if data is not None and "mera" not in values and is_mera_folder(Path(data).expanduser()):
            values["mera"], values["options"] = with_mera(names, values["options"], own_shots=shots is None)
        shots = (0,) if shots is None else shots
        return cls(
            tasks=names,
            model=model,
            data=_absolute(data),
            limit=check_limit(limit),
            slices=tuple(resolve_slices(slices) if isinstance(slices, str) else slices),
            shots=tuple(shots) if isinstance(shots, Sequence) and not isinstance(shots, str) else (shots,),
            include_path=folders,
            **values,
        )

    @property
    def read_limits(self) -> ReadLimits:
        return ReadLimits(self.max_line_bytes, self.max_file_bytes, self.max_lines, self.max_blank_lines)

    @property
    def family(self) -> Family:
        return LANGUAGE_MODEL if self.in_memory else family_of(self.model)

    @property
    def in_memory(self) -> bool:
        """A language model given to rueval.evaluate in memory: its solver comes with the run."""
        return isinstance(self.options, LMOptions) and self.options.engine is None

    @property
    def task_list(self) -> list[Task]:
        return [get_task(name) for name in self.tasks]

    def settings(self, task: Task) -> list[Setting]:
        """The few-shot settings the task is run in, in order: each k of --shots and each of its
        episodes; under MERA's settings, MERA's k for its tasks, each item's demonstrations drawn in turn.
        Zero-shot has one episode (nothing to draw)."""
        if self.mera is None:
            return settings_of(self.shots, self.episodes)
        return settings_of(self.mera.shots_of(task.name) or self.shots, 1, self.mera.fewshot_seed)

    def prompts_of(self, task: Task) -> tuple[TaskPrompt, ...]:
        """The prompts the task is asked with, the default first: with --prompts all every one its paper ran."""
        return asked_prompts(task, self.prompts)

    def solver(self, work_dir: Path | None = None) -> Solver:
        """The run's solver, made from the spec; ``work_dir`` keeps what it saves between runs (checkpoints)."""
        return self.family.make(self.model, self.options, self.seed, work_dir)

    def to_json(self) -> dict[str, Any]:
        return {
            "tasks": list(self.tasks),
            "model": self.model,
            "family": self.family.name,
            "solver_options": self.options.to_json(),
            "data": self.data,
            "split": self.split,
            "tape_set": self.tape_set,
            "max_line_bytes": self.max_line_bytes,
            "max_file_bytes": self.max_file_bytes,
            "max_lines": self.max_lines,
            "max_blank_lines": self.max_blank_lines,
            "shots": list(self.shots),
            "episodes": self.episodes,
            "prompts": self.prompts,
            "robustness": None if self.robustness is None else self.robustness.to_json(self.seed),
            "slices": list(self.slices),
            "limit": self.limit,
            "seed": self.seed,
            "log_samples": self.log_samples,
            "include_path": list(self.include_path),
            "predict_only": self.predict_only,
            "mera": None if self.mera is None else self.mera.to_json(),
            "protocol_version": PROTOCOL_VERSION,
        }

    def fingerprint(self) -> str:
        """A hash of every value a number of the run depends on, the protocol version with them."""
        return digest(scored(self.to_json()))

    @classmethod
    def from_json(cls, data: Any, file: str, resolved: Sequence[str] = ()) -> RunSpec:
        """A saved spec, every field checked; an error names ``file`` and the field. ``resolved``: keys
        a run adds beside the spec's (the model's identity, ...), read past."""
        check = Checker(file)
        data = dict(check.obj(data, ""))
        check.required(data, "tasks", "")
        check.required(data, "model", "")
        family = FAMILIES.get(check.text(data.pop("family", ""), "family"))
        if family is None:
            raise check.fail("family", f"expected one of: {', '.join(FAMILIES)}")
        for key in ("protocol_version", *resolved):
            data.pop(key, None)
        options = family.options.from_json(data.pop("solver_options", {}), check, "solver_options.")
        robustness = data.pop("robustness", None)
        if robustness is not None:
            robustness = RobustnessOptions.from_json(robustness, check, "robustness.")
        mera = data.pop("mera", None)
        if mera is not None:
            mera = MeraSettings.from_json(mera, check, "mera.")
        return check.fields(cls, data, "", {"options": options, "robustness": robustness, "mera": mera})


def read_spec(path: Path, resolved: Sequence[str] = ()) -> RunSpec:
    return RunSpec.from_json(read_json_file(path), str(path), resolved)


def scored(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run's numbers depend on: a spec's JSON (with what a run adds to it) without the
    values no number depends on."""
    kept = {key: value for key, value in settings.items() if key not in UNSCORED}
    family = FAMILIES.get(str(kept.get("family")))
    if family is not None and isinstance(kept.get("solver_options"), Mapping):
        options = kept["solver_options"].items()
        kept["solver_options"] = {key: value for key, value in options if key not in family.options.UNSCORED}
    return kept


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _names(value: Any, name: str, kind: Any = str) -> list[Any]:
    """A name, or a sequence of them, as a list; an error naming the option for anything else."""
    items = [value] if isinstance(value, str | Path) else value
    if not isinstance(items, Sequence) or not all(isinstance(item, kind) for item in items):
        raise RuevalError(f"{flag(name)}: expected a name or a list of names, got {value!r:.40}")
    return list(items)


def _absolute(data: str | Path | None) -> str | None:
    """A data path made absolute (a run saved in run.json resumes from anywhere); "hf" and None as they are."""
    if data is None or str(data) == "hf" or not Path(data).exists():
        return None if data is None else str(data)
    return str(Path(data).resolve())


def _absolute_folders(include_path: str | Path | Sequence[str | Path]) -> list[str]:
    """--include-path's folders (or files), a comma separating several, as absolute paths."""
    given = [include_path] if isinstance(include_path, str | Path) else include_path
    parts = [part.strip() for path in given for part in str(path).split(",") if part.strip()]
    return [str(Path(part).expanduser().resolve()) for part in parts]


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
