"""The run specification: every value that configures a run, typed and resolved, in one frozen
record. `rueval run`, `submit`, `perturb`, `--resume` and `rueval.evaluate` all build one; the
pipeline takes it; OUT/run.json saves it (``to_json`` / ``from_json``), and its fingerprint decides
which earlier results a run may reuse."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.option_fields import check_choices, option, to_json, unscored_fields
from rueval.core.unsafe_code import refusal
from rueval.data import DEFAULT_LIMITS, TAPE_SETS, ReadLimits, check_data_spec, is_mera_folder
from rueval.data.mera_generative_tasks import GENERATIVE, NOT_MERA
from rueval.data.mera_tasks import MERA
from rueval.models.factory import BACKENDS
from rueval.results.checks import Checker, read_json_file
from rueval.run.checks import check_limit, check_ranges, check_types, flag
from rueval.run.mera_settings import MeraSettings, with_mera
from rueval.run.predict import settings_of
from rueval.run.robustness_options import ALL, RobustnessOptions
from rueval.scoring.slices import check_slice_names, resolve_slices
from rueval.solvers import (
    FAMILIES,
    LANGUAGE_MODEL,
    NAMED,
    Family,
    Setting,
    Solver,
    SolverOptions,
    family_of,
    solver_options,
)
from rueval.solvers.options import LMOptions, NoOptions
from rueval.tasks import Task, get_task, resolve_tasks
from rueval.tasks.lm_eval_tasks import task_file_names
from rueval.tasks.prompts import PROMPT_CHOICES, TaskPrompt, asked_prompts

# Bump with any change of a default or of how a number is computed (prompts, scoring, metrics,
# data reading): a task result saved under another protocol is never reused.
# 2: RCB F1 as jiant computes it on subsets, CheGeKa's empty alternative a gold answer, openai: sends token ids,
#    hf: generates one prompt at a time
# 3: MERA's files asked as the current MERA asks (MERA-Evaluation/MERA): zero-shot without "\nОтвет:" after
#    the RSG instructions, MERA's demonstrations and shot counts, greedy generation with its stop and token limit
# 4: hf: records its start-token policy (bos; -m hf: keeps TAPE's, always); MERA's draw of demonstrations leaves
#    out a train record equal to the item, as MERA's sampler does
# 5: hf: generates in batches by default (run.json's generation_mode; --batch-size 1 keeps one at a time)
PROTOCOL_VERSION = 5
SPLITS = ("val", "test")
JSON_KEYS = {"options": "solver_options"}  # the fields run.json writes under another name
TASKS_HELP = "Comma-separated task names, or rsg, tape, mera, all; or lm-eval's task, group or tag names."


_MODELS = [*NAMED, *(f"{name}:{backend.target}" for name, backend in BACKENDS.items())]


@dataclass(frozen=True)
class RunSpec:
    """What to run: the tasks and their data, the model with its family's options, the few-shot
    settings, robustness, slices, limit and seed, every value resolved (no "default" left to look up).
    Each field is an option declared once (rueval.core.option_fields): ``to_json``, the fingerprint
    and --resume follow from the declarations."""

    # which tasks a run scores changes none of their numbers: each task's fingerprint names it
    tasks: tuple[str, ...] = option(help=TASKS_HELP, scored=False)
    # -m: a solver's name, a model spec (hf:, openai:, finetune:), or the identity of an LM given in memory
    model: str = option("majority", help=", ".join(_MODELS) + ".", set_by=("model_args",))
    options: SolverOptions = option(  # the model's family's options (rueval.solvers.options)
        NoOptions(), help="The model's family's options (rueval.solvers.options).", set_by=("model_args",)
    )
    data: str | None = option(  # an absolute path, "hf", or None for the bundled samples
        None, help="A directory or zip in the official layout, or 'hf'. Default: the bundled samples."
    )
    split: str | None = option(
        None, help="Split to score. Default: test when it is labelled, else val.", choices=SPLITS
    )
    tape_set: str = option(
        "episodes",
        help="TAPE: score its episodes test sets (the paper's tables) or every raw record.",
        choices=TAPE_SETS,
    )
    # each data file read within these (rueval.data.ReadLimits); how much is read changes no number
    max_line_bytes: int = option(
        DEFAULT_LIMITS.line_bytes,
        help="Refuse data lines longer than this many MB (hostile input).",
        scored=False,
        set_by=("max_line_mb",),
    )
    max_file_bytes: int = option(
        DEFAULT_LIMITS.file_bytes,
        help="Refuse data files (zip members: inflated) larger.",
        scored=False,
        set_by=("max_file_mb",),
    )
    max_lines: int = option(DEFAULT_LIMITS.lines, help="Refuse data files with more lines.", scored=False)
    max_blank_lines: int = option(
        DEFAULT_LIMITS.blank_lines, help="Refuse data files with more blank lines.", scored=False
    )
    shots: tuple[int, ...] = option(
        (0,),
        help="LMs: numbers of few-shot demonstrations, e.g. 0,1,4,8. Default: 0; on MERA's files MERA's.",
        set_by=("num_fewshot",),
    )
    episodes: int = option(1, help="LMs: demonstration sets per k > 0 (TAPE uses 5).")
    prompts: str = option(
        "default",
        help="LMs: ask each task with its default prompt, or with all the prompts its paper ran (TAPE: Winograd, "
        "Ethics), reporting each prompt's score and their mean ± std; the headline stays the default prompt's.",
        choices=PROMPT_CHOICES,
    )
    robustness: RobustnessOptions | None = option(
        None,
        help="Also score perturbed examples and attack success rates: all, or NAME[:RATE],...",
        set_by=(
            "perturb",
            "filter_model",
            "filter_threshold",
            "filter_min_share",
            "translation_model",
            "addsent_model",
        ),
    )
    slices: tuple[str, ...] = option((), help="Score per TAPE subpopulation: all, or comma-separated slice names.")
    limit: int | float | None = option(
        None,
        help="Score only the first N records of each task, or below 1 that share of them, rounded up (lm-eval's "
        "--limit); limited scores are not the benchmark's.",
    )
    seed: int = option(0, help="Seed for every random choice.")
    log_samples: bool = option(
        False,
        help="Write OUT/samples/samples_<task>_<date id>.jsonl: every example's prompts, scores and metrics "
        "(lm-eval's name and shape).",
        scored=False,
    )
    # lm-evaluation-harness task files: a run is of rueval's tasks (``tasks``) or of task files, never both
    task_files: tuple[str, ...] = option((), help=TASKS_HELP, set_by=("tasks",))
    include_path: tuple[str, ...] = option(
        (),
        help="lm-eval task files under this folder, run by lm-eval's own task code (the lm-eval extra); repeatable.",
    )
    # consents, given anew by each command: --resume never gives them from run.json (rueval.run.resume)
    trust_task_code: bool = option(
        False,
        help="Run the Python that task files name (!function: process_docs, process_results, metrics).",
        scored=False,
    )
    confirm_run_unsafe_code: bool = option(
        False,
        help="Run the code a model writes (MERA's ruHumanEval and ruCodeEval, task files marked unsafe_code) on "
        "this machine: a subprocess with limits, not a sandbox.",
        scored=False,
    )
    predict_only: bool = option(
        False,
        help="Predict and write the predictions without scoring them (lm-eval's flag); by default test. "
        "A split without answers is always predicted, not scored.",
    )
    mera: MeraSettings | None = option(  # rueval.run.mera_settings
        None, help="MERA's settings: a language model on MERA's files takes them (not an option of its own)."
    )

    def __post_init__(self) -> None:
        check_types(self)
        if not self.tasks and not self.task_files:
            raise RuevalError("name at least one task")
        if self.tasks and self.task_files:
            raise RuevalError(
                f"rueval's tasks ({', '.join(self.tasks)}) and lm-eval's task files ({', '.join(self.task_files)}) "
                "run as two runs: name one kind in each"
            )
        for task in self.tasks:
            get_task(task)
        if not isinstance(self.options, self.family.options):
            raise RuevalError(f"{type(self.options).__name__}: not the options of {self.model} ({self.family.name})")
        check_choices(self)
        check_ranges(self.seed, self.shots or (0,), self.episodes)
        if self.task_files:
            self._check_task_files()
        elif not self.shots:
            raise RuevalError("--shots: expected one or more non-negative numbers")
        if set(self.shots) - {0} and not isinstance(self.options, LMOptions):
            raise RuevalError("--shots and --episodes need a language model (-m hf:... or -m openai:...)")
        self._check_prompts()
        if self.mera is not None and (self.episodes != 1 or not isinstance(self.options, LMOptions)):
            raise RuevalError(
                "MERA's settings are a language model's, and draw each item's demonstrations once: --episodes 1"
            )
        _ = self.read_limits  # each limit checked by ReadLimits
        check_limit(self.limit)
        check_slice_names(self.slices)

    def _check_task_files(self) -> None:
        """What lm-eval's evaluator takes: one --num_fewshot (none: each file's own), its own sampler,
        prompts and data; rueval's own options for its tasks are refused by name."""
        if len(self.shots) > 1:
            raise RuevalError(f"--shots {','.join(map(str, self.shots))}: task files take one --num_fewshot per run")
        given = {
            "--episodes": self.episodes != 1,
            "--prompts": self.prompts == ALL,
            "--perturb": self.robustness is not None,
            "--slices": bool(self.slices),
            "--data": self.data is not None,
            "--split": self.split is not None,
        }
        if any(given.values()):
            named = ", ".join(name for name, value in given.items() if value)
            raise RuevalError(
                f"{named}: rueval's options for its own tasks; a task file says its data, prompts and splits"
            )
        if not isinstance(self.options, LMOptions):
            models = "-m hf:..., vllm:..., openai:..."
            raise RuevalError(f"task files are asked of a language model ({models}), not {self.model}")

    def _check_prompts(self) -> None:
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
        folders = cls.include_folders(include_path)
        asked = [name for part in _names(tasks, "tasks") for name in part.split(",") if name.strip()]
        task_files = task_file_names([name.strip() for name in asked], folders)
        own = [name for name in asked if name.strip() not in task_files]
        names = tuple(task.name for task in resolve_tasks(",".join(own))) if own or not task_files else ()
        if data is not None and "mera" not in values and is_mera_folder(Path(data).expanduser()):
            values["mera"], values["options"] = with_mera(names, values["options"], own_shots=shots is None)
        shots = (() if task_files else (0,)) if shots is None else shots  # task files: each file's own num_fewshot
        return cls(
            tasks=names,
            task_files=task_files,
            model=model,
            data=_absolute(data),
            limit=check_limit(limit),
            slices=tuple(resolve_slices(slices) if isinstance(slices, str) else slices),
            shots=tuple(shots) if isinstance(shots, Sequence) and not isinstance(shots, str) else (shots,),
            include_path=folders,
            **values,
        )

    @staticmethod
    def include_folders(include_path: str | Path | Sequence[str | Path]) -> tuple[str, ...]:
        """--include-path's folders as absolute paths (the run resumes from anywhere); one that is not a
        folder is an error. A name may hold a comma: the option is given again for another folder."""
        folders = [Path(path).expanduser().resolve() for path in _names(include_path, "include_path", str | Path)]
        for folder in folders:
            if not folder.is_dir():
                raise RuevalError(f"--include-path {folder}: not a folder of task files")
        return tuple(map(str, folders))

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

    def check_consents(self) -> None:
        """A task that runs the model's code needs --confirm-run-unsafe-code (given anew to each command)."""
        executing = [task for task in self.tasks if GENERATIVE.get(task, NOT_MERA).executes]
        if executing and not self.confirm_run_unsafe_code:
            raise refusal(", ".join(MERA[task].name for task in executing))

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
        """Every field (the model's options as ``solver_options``, with the model's family), the
        protocol version with them."""
        # each perturbation with the run's seed: it seeds them all
        robustness = None if self.robustness is None else self.robustness.to_json(self.seed)
        data = to_json(self, JSON_KEYS, {"robustness": robustness})
        head = {"tasks": data["tasks"], "model": data["model"], "family": self.family.name}
        return {**head, **data, "protocol_version": PROTOCOL_VERSION}

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


# What a run records that no number depends on (declared so): which tasks it scores (each task's own
# fingerprint names it, and runs of the same settings share a directory), sample logs, the read limits,
# the consents to run code. A family's options say their own (rueval.solvers.options: UNSCORED).
UNSCORED = unscored_fields(RunSpec)


def read_spec(path: Path, resolved: Sequence[str] = ()) -> RunSpec:
    return RunSpec.from_json(read_json_file(path), str(path), resolved)


def scored(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run's numbers depend on: a spec's JSON (with what a run adds to it) without the
    values declared unscored, nor the options the model's backend does not read."""
    kept = {key: value for key, value in settings.items() if key not in UNSCORED}
    family = FAMILIES.get(str(kept.get("family")))
    if family is not None and isinstance(kept.get("solver_options"), Mapping):
        options, unread = kept["solver_options"].items(), family.options.unscored(str(kept.get("model")))
        kept["solver_options"] = {key: value for key, value in options if key not in unread}
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
