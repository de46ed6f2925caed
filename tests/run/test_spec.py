"""The run specification: one typed value configures a run from the command line, the Python API and
--resume alike; it reads back from its JSON, its fingerprint holds every resolved value a number
depends on, and a damaged run.json is one line naming the file and field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import pytest
from support import require_modules
from task_files import CHOICE, task_file
from typer.main import get_command

import rueval
from rueval.cli import app
from rueval.core.errors import RuevalError
from rueval.run import RunSpec, RunStore, spec
from rueval.run.spec import RobustnessOptions
from rueval.solvers import FAMILIES, NAMED, Family, Solver, register
from rueval.solvers.options import PlainOptions
from rueval.tasks import get_task


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


def specs(folder) -> list[RunSpec]:
    """A spec of every solver family, each with options other than its defaults, and a run of the lm-eval
    task files in ``folder``."""
    require_modules("torch", "transformers", extra="finetune")
    robustness = RobustnessOptions.parse("butter_fingers:0.3,eda_swap", filter_threshold=0.5)
    lm_options = {"apply_chat_template": True, "gen_kwargs": "temperature=0,max_gen_toks=8", "batch_size": "4"}
    return [
        RunSpec.create("rcb,parus", "majority", limit=0.5, slices="all", robustness=robustness),
        RunSpec.create("rsg", "heuristic", {"rules": "all", "fallback": "random"}, seed=3, split="val"),
        RunSpec.create(["terra"], "tfidf-fields", tape_set="raw", log_samples=True),
        RunSpec.create("rcb", "finetune:some/encoder", {"ft_epochs": 2.0, "ft_save": "/tmp/models"}, seed=5),
        RunSpec.create("tape", "hf:some/model", lm_options, shots=[0, 1, 4], episodes=5, prompts="all"),
        RunSpec.create("plain", "hf:some/model", lm_options, shots=2, include_path=[folder], trust_task_code=True),
    ]  # fmt: skip


def test_a_spec_of_every_family_reads_back_from_its_json_with_the_same_fingerprint(tmp_path, task_registry):
    task_file(tmp_path, "plain", CHOICE)
    for original in specs(tmp_path):
        saved = json.loads(json.dumps(original.to_json()))
        again = RunSpec.from_json(saved, "run.json")
        assert again == original and again.fingerprint() == original.fingerprint()


def test_defaults_are_resolved_into_the_fingerprint_and_only_unscored_values_leave_it_unchanged(monkeypatch):
    base = RunSpec.create("rcb", "hf:some/model")
    options = base.to_json()["solver_options"]
    assert options["device"] == "cpu" and options["batch_size"] == "auto" and options["gen_kwargs"] == {}
    assert options["apply_chat_template"] is False and options["chat_scoring"] == "auto"  # written, not left out
    changed = [
        RunSpec.create("rcb", "hf:some/model", {"scoring": "ppl"}),
        RunSpec.create("rcb", "hf:some/model", {"batch_size": 8}),
        RunSpec.create("rcb", "hf:some/model", {"gen_kwargs": "temperature=0"}),
        RunSpec.create("rcb", "hf:some/model", {"system_instruction": "Отвечай кратко."}),
        RunSpec.create("rcb", "hf:some/model", seed=1),
        RunSpec.create("rcb", "hf:some/model", shots=[0, 1]),
        RunSpec.create("rcb", "hf:some/model", split="test"),
        RunSpec.create("rcb", "hf:some/model", limit=3),
        RunSpec.create("rcb", "hf:some/model", robustness=RobustnessOptions.parse("all")),
        RunSpec.create("rcb", "hf:some/model", robustness=RobustnessOptions.parse("all", filter_threshold=0.5)),
        RunSpec.create("rcb", "hf:some/model", {"device": "cuda", "dtype": "float16"}),
        RunSpec.create("rcb", "hf:some/model", {"apply_chat_template": True}),
        RunSpec.create("rcb", "hf:some/model", episodes=2, shots=[0, 1]),
        RunSpec.create("rcb", "hf:some/model", prompts="all"),
        RunSpec.create("rcb", "hf:some/model", tape_set="raw"),
        RunSpec.create("rcb", "hf:some/model", slices="all"),
        RunSpec.create("rcb", "hf:some/model", data="hf"),
        RunSpec.create("rcb", "hf:other/model"),
    ]
    assert len({base.fingerprint(), *(other.fingerprint() for other in changed)}) == len(changed) + 1
    unscored = [
        RunSpec.create("parus", "hf:some/model"),
        RunSpec.create("rcb", "hf:some/model", log_samples=True),
        RunSpec.create("rcb", "hf:some/model", max_line_bytes=1024),
        RunSpec.create("rcb", "hf:some/model", {"cache": "refresh", "concurrency": 2}),
    ]
    assert {other.fingerprint() for other in unscored} == {base.fingerprint()}
    require_modules("torch", "transformers", extra="finetune")
    saved = RunSpec.create("rcb", "finetune:some/encoder", {"ft_save": "/tmp/models"})
    assert saved.fingerprint() == RunSpec.create("rcb", "finetune:some/encoder").fingerprint()
    assert RunSpec.create("rcb", "finetune:some/encoder", {"ft_lr": 2e-5}).fingerprint() != saved.fingerprint()
    before = base.fingerprint()
    monkeypatch.setattr(spec, "PROTOCOL_VERSION", spec.PROTOCOL_VERSION + 1)
    assert base.fingerprint() != before


def test_the_command_line_the_api_and_resume_build_the_same_spec(cli, tmp_path):
    command = cli("run", "-m", "heuristic", "-t", "rcb", "--rules", "all", "--seed", "3", "--limit", "5", "-o",
                  tmp_path / "cli")  # fmt: skip
    assert command.exit_code == 0, command.output
    rueval.evaluate("heuristic", tasks=["rcb"], seed=3, limit=5, rules="all", out=tmp_path / "api")
    from_cli, from_api = (RunStore(tmp_path / name).load_spec() for name in ("cli", "api"))
    assert from_cli == from_api == RunSpec.create("rcb", "heuristic", {"rules": "all"}, seed=3, limit=5)
    fingerprints = [read(tmp_path / name / "tasks" / "rcb.json")["fingerprint"] for name in ("cli", "api")]
    assert fingerprints[0] == fingerprints[1]
    resumed = cli("run", "--resume", "-o", tmp_path / "api")
    assert resumed.exit_code == 0 and read(tmp_path / "api" / "results.json")["reused"] == ["rcb"]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("shots", "0,1", "field 'shots'"),
        ("family", "telepathy", "field 'family'"),
        ("solver_options", {"rules": "some"}, "field 'solver_options'"),
        ("solver_options", {"fallback": 3}, "field 'solver_options.fallback'"),
        ("seeds", 3, "field 'seeds': unknown field"),
        ("tasks", ["nosuchtask"], "unknown task"),
        ("prompts", "every", "--prompts every: expected one of default, all"),
        ("prompts", "all", "--prompts all needs a language model"),
    ],
)
def test_a_damaged_run_json_is_one_line_naming_the_file_and_field(cli, tmp_path, field, value, named):
    out = tmp_path / "out"
    assert cli("run", "-m", "heuristic", "-t", "rcb", "-o", out).exit_code == 0
    saved = read(out / "run.json")
    (out / "run.json").write_text(json.dumps({**saved, field: value}), encoding="utf-8")
    (out / "results.json").unlink()
    result = cli("run", "--resume", "-o", out)
    assert result.exit_code == 2 and str(out / "run.json") in result.stderr and named in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_options_meant_for_another_kind_of_model_are_refused_by_name(cli, tmp_path):
    for args, message in (
        (("-m", "heuristic", "--ft-epochs", "2"), "--ft-epochs: not an option of heuristic"),
        (("-m", "hf:some/model", "--fallback", "random"), "--fallback: not an option of hf:some/model"),
        (("-m", "tfidf", "--device", "cuda"), "--device: tfidf is no language model"),
    ):
        result = cli("run", *args, "-t", "rcb", "-o", tmp_path / "out")
        assert result.exit_code == 2 and message in result.stderr, result.output
    with pytest.raises(RuevalError, match="max_new_tokens: not an option of hf:some/model"):
        rueval.evaluate("hf:some/model", tasks="rcb", max_new_tokens=3)
    refused = cli("submit", "-m", "majority", "--gen-kwargs", "temperature=0", "-o", tmp_path / "sub.zip")
    assert refused.exit_code == 2 and "--gen-kwargs: majority is no language model" in refused.stderr


def test_run_and_submit_take_the_same_solver_options_declared_once():
    commands = get_command(app).commands
    options = {name: {p.name: p.default for p in commands[name].params} for name in ("run", "submit")}
    shared = {"fallback", "rules", "scoring", "batch_size", "dtype", "cache", "gen_kwargs", "ft_epochs", "ft_save"}
    assert all(options["run"][name] == options["submit"][name] for name in shared)
    assert {"model_args", "apply_chat_template", "base_url"} <= set(options["submit"])


def test_a_run_under_another_protocol_is_never_reused(cli, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert cli("run", "-t", "rcb", "-o", out).exit_code == 0
    monkeypatch.setattr(spec, "PROTOCOL_VERSION", spec.PROTOCOL_VERSION + 1)
    refused = cli("run", "-t", "rcb", "-o", out)
    assert refused.exit_code == 2 and "protocol_version" in refused.stderr  # another run's results
    assert cli("run", "-t", "rcb", "-o", out, "--force").exit_code == 0
    assert read(out / "results.json")["reused"] == []


class FirstLabel(Solver):
    """A made-up solver: every example gets the task's first label (or its last)."""

    name = "first-label"

    def __init__(self, last: bool):
        self.last = last

    def fit(self, task, train):
        pass

    def predict(self, task, examples):
        return [task.labels[-1 if self.last else 0] for _ in examples]


@dataclass(frozen=True)
class FirstLabelOptions(PlainOptions):
    NAMES: ClassVar[tuple[str, ...]] = ("last",)
    last: bool = False


@pytest.fixture
def families():
    """The solver registry as it was, after the test."""
    saved = dict(FAMILIES), dict(NAMED)
    yield
    for registry, before in zip((FAMILIES, NAMED), saved, strict=True):
        registry.clear()
        registry.update(before)


def test_a_solver_family_registered_with_one_line_runs_through_the_api_and_resumes(tmp_path, families, cli):
    register(Family("first", FirstLabelOptions, lambda model, options, seed, work: FirstLabel(options.last)), "first")
    out = tmp_path / "out"
    results = rueval.evaluate("first", tasks="rcb", last=True, out=out)
    assert {row.prediction for row in results.predictions["rcb"]} == {get_task("rcb").labels[-1]}
    saved = read(out / "run.json")
    assert (saved["family"], saved["solver_options"]) == ("first", {"last": True})
    assert RunStore(out).load_spec() == RunSpec.create("rcb", "first", {"last": True})
    (out / "results.json").unlink()
    assert cli("run", "--resume", "-o", out).exit_code == 0 and read(out / "results.json")["reused"] == ["rcb"]
    with pytest.raises(RuevalError, match="rules: not an option of first"):
        rueval.evaluate("first", tasks="rcb", rules="all")
