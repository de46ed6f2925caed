"""Each option is declared once, as a field of the value it configures (rueval.core.option_fields):
every field is fingerprinted or declared unscored, the command line's and the Python API's explicit
parameters say what the declarations say (names, defaults, help, choices), and an option a backend
does not read stays out of its runs' fingerprints."""

from __future__ import annotations

import dataclasses
from typing import Any

from option_checks import declared_options, mismatches, parameters

from rueval.api import evaluate
from rueval.cli.evaluate import RUN_ONLY, run
from rueval.core.option_fields import declarations
from rueval.models.factory import BACKENDS, ModelOptions
from rueval.run.robustness_options import RobustnessOptions
from rueval.run.spec import JSON_KEYS, RunSpec, scored
from rueval.solvers.finetune.training_options import FinetuneOptions
from rueval.solvers.options import FinetuneRun, HeuristicOptions, LMOptions, LMOwnOptions

# every value a run is configured by, as its options' declarations
DECLARED = (RunSpec, HeuristicOptions, LMOwnOptions, ModelOptions, FinetuneRun, FinetuneOptions, RobustnessOptions)
# declared values no command-line option of their own sets: the family's options (each its own
# option), MERA's settings (from MERA's files), what --perturb resolves, fine-tuning settings of the
# Python API, and a model given in memory
NOT_ON_THE_COMMAND_LINE = {
    "options", "mera", "perturbations", "requested", "in_memory", "training", "task_files",
    "dynamic_padding", "group_by_length", "checkpoint_steps",
}  # fmt: skip
# left unset, these resolve when the run is made: all tasks, no slices, 0 shots or MERA's, the GPU when
# there is one, the run's seed, the semantic filter's own threshold, TAPE's sampling
RESOLVED_WHEN_NOT_GIVEN = {
    "tasks", "shots", "slices", "include_path", "device", "ft_seed", "filter_threshold", "gen_kwargs",
}  # fmt: skip
RESOLVED_IN_THE_API = {"shots", "gen_kwargs"}
# rueval.evaluate's arguments that say how to run, not what: the model itself, its tokenizer, the folder
API_ONLY = {"model", "tokenizer", "out", "force", "model_options"}
# RunSpec's options the Python API leaves at their defaults (the command line's only)
# (task files run from Python through lm-eval's own simple_evaluate: rueval.models.backends.lm_eval_lm)
COMMAND_LINE_ONLY = {"slices", "tape_set", "robustness", "max_line_bytes", "max_file_bytes", "max_lines",
                     "max_blank_lines", "options", "mera", "task_files", "include_path", "trust_task_code",
                     "confirm_run_unsafe_code"}  # fmt: skip


def test_every_field_is_declared_and_fingerprinted_unless_declared_unscored():
    for cls in DECLARED:
        undeclared = [f.name for f in dataclasses.fields(cls) if f.name not in declarations(cls)]
        assert undeclared == [], f"{cls.__name__}: declare each field with rueval.core.option_fields.option"
        assert all(declared.help for declared in declarations(cls).values())
    spec = RunSpec.create("rcb", "hf:some/model")
    keys = {JSON_KEYS.get(name, name): declared.scored for name, declared in declarations(RunSpec).items()}
    assert set(spec.to_json()) == {*keys, "family", "protocol_version"}
    assert set(scored(spec.to_json())) == {key for key, kept in keys.items() if kept} | {"family", "protocol_version"}
    own = [name for name in declarations(LMOwnOptions) if name != "in_memory"]
    assert set(LMOptions().to_json()) == {*own, *declarations(ModelOptions)}
    training = RunSpec.create("rcb", "finetune:some/encoder").to_json()["solver_options"]
    assert set(training) == {*declarations(FinetuneOptions), "save_dir"}
    assert set(scored({"family": "finetune", "solver_options": training})["solver_options"]) == {
        *declarations(FinetuneOptions)
    }


def test_the_command_lines_options_say_what_their_declarations_say():
    skipped = {"context", *RUN_ONLY, "model_args"}  # model_args: lm-eval's spelling of -m and its options
    options = declared_options(DECLARED)
    assert mismatches(run, options, skipped, RESOLVED_WHEN_NOT_GIVEN, NOT_ON_THE_COMMAND_LINE) == []


def test_the_python_apis_arguments_say_what_their_declarations_say():
    options = declared_options(DECLARED)
    arguments = {name: default for name, (_, _, default) in parameters(evaluate).items() if name not in API_ONLY}
    assert [name for name in arguments if name not in options] == []
    for name, default in arguments.items():
        declared_default = options[name][0][2]
        assert default == declared_default or name in RESOLVED_IN_THE_API | {"tasks"}, name
    assert [name for name in arguments if f"``{name}``" not in (evaluate.__doc__ or "")] == []  # its help
    missing = set(declarations(RunSpec)) - set(arguments) - COMMAND_LINE_ONLY - API_ONLY
    assert missing == set(), "add these to rueval.evaluate, or to COMMAND_LINE_ONLY with the reason"


# a value other than the default of each model option
OTHER_VALUES = {
    "batch_size": 8, "device": "cuda", "dtype": "float16", "trust_remote_code": True,
    "base_url": "http://other:8000/v1", "concurrency": 2, "tokenizer": "text", "timeout": 5.0, "cache": "off",
    "chat_scoring": "generate", "revision": "v2", "device_map": "auto", "peft": "/adapter", "load_in": "8bit",
    "bos": "tokenizer",
}  # fmt: skip


def test_an_option_a_backend_does_not_read_leaves_its_runs_fingerprint_unchanged():
    def fingerprint(model: str, **given: Any) -> str:
        return RunSpec.create("rcb", model, given).fingerprint()

    assert set(OTHER_VALUES) == set(declarations(ModelOptions))
    for backend in BACKENDS:
        model = f"{backend}:some/model"
        for name, declared in declarations(ModelOptions).items():
            if name == "chat_scoring" and not BACKENDS[backend].renders_chat:
                continue  # refused for the others
            if name == "tokenizer" and "tokenizer" not in BACKENDS[backend].keys:
                continue  # refused when the model opens
            read = declared.scored and (not declared.read_by or backend in declared.read_by)
            changed = fingerprint(model, **{name: OTHER_VALUES[name]}) != fingerprint(model)
            assert changed == read, (backend, name)
