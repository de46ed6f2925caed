"""A scoring option added as the recipe says: one declaration (a field with its help, default and
whether numbers depend on it), its explicit parameters (a command's, checked against the declaration;
rueval.evaluate's, by name) and its reader (the solver). Nothing else in rueval is edited for it: the
run's JSON, its fingerprint, the checks and the --resume rules follow from the declaration."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar

import pytest
import typer
from option_checks import declared_options, mismatches
from typer.testing import CliRunner

import rueval
from rueval.cli.option_types import user_errors
from rueval.core.option_fields import option
from rueval.run import RunSpec
from rueval.run import run as run_spec
from rueval.run.resume import resumed
from rueval.solvers import FAMILIES, NAMED, Family, Solver, register
from rueval.solvers.options import PlainOptions
from rueval.tasks import get_task

SHIFT_HELP = "-m shifted: predict the label this many places after the task's first."
NOTE_HELP = "-m shifted: a note kept with the run (no number depends on it)."


@dataclass(frozen=True)
class ShiftedOptions(PlainOptions):
    """The declarations: a scoring option and an unscored one."""

    NAMES: ClassVar[tuple[str, ...]] = ("shift", "note")
    shift: int = option(0, help=SHIFT_HELP)
    note: str = option("", help=NOTE_HELP, scored=False)


class Shifted(Solver):
    """The reader: every example gets the label ``shift`` places after the task's first."""

    name = "shifted"

    def __init__(self, shift: int):
        self.shift = shift

    def fit(self, task, train):
        pass

    def predict(self, task, examples):
        return [task.labels[self.shift % len(task.labels)] for _ in examples]


@pytest.fixture
def shifted():
    """The made-up family registered with one line; the registry as it was after the test."""
    saved = dict(FAMILIES), dict(NAMED)
    register(Family("shifted", ShiftedOptions, lambda model, options, seed, work: Shifted(options.shift)), "shifted")
    yield
    for registry, before in zip((FAMILIES, NAMED), saved, strict=True):
        registry.clear()
        registry.update(before)


app = typer.Typer()


@app.command()
@user_errors
def command(
    context: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o")],
    shift: Annotated[int, typer.Option(help=SHIFT_HELP)] = 0,
    note: Annotated[str, typer.Option(help=NOTE_HELP)] = "",
    resume: bool = False,
) -> None:
    """A command with the made-up options as explicit parameters, building its run as `rueval run` does."""

    def asked(tasks=("rcb",), model="shifted", include_path=()) -> RunSpec:
        return RunSpec.create(tasks, model, {"shift": shift, "note": note}, include_path=include_path)

    typed = [name for name in ("shift", "note") if context.get_parameter_source(name).name == "COMMANDLINE"]
    run_spec(resumed(out, typed, asked) if resume else asked(), out)


def call(*args: object):
    return CliRunner().invoke(app, [str(arg) for arg in args])


def recorded(out: Path) -> dict:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def test_the_made_up_options_parameters_are_checked_against_its_declaration(shifted):
    options = declared_options([ShiftedOptions])
    assert mismatches(command, options, {"context", "out", "resume"}) == []

    def drifted(shift: Annotated[int, typer.Option(help="another text")] = 1) -> None: ...

    assert mismatches(drifted, options, set()) == [
        "shift: default 1, declared 0",
        f"shift: help 'another text', declared {SHIFT_HELP!r}",
        "note: declared, no option",
    ]


def test_the_made_up_option_reaches_its_reader_and_the_runs_json_from_the_command_and_the_api(shifted, tmp_path):
    assert call("-o", tmp_path / "cli", "--shift", 1).exit_code == 0
    labels = get_task("rcb").labels
    predictions = (tmp_path / "cli" / "predictions" / "rcb.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["prediction"] for line in predictions} == {labels[1]}
    assert recorded(tmp_path / "cli")["solver_options"] == {"shift": 1, "note": ""}
    results = rueval.evaluate("shifted", tasks="rcb", shift=1, out=tmp_path / "api")
    assert {row.prediction for row in results.predictions["rcb"]} == {labels[1]}
    fingerprints = [recorded_task(tmp_path / name)["fingerprint"] for name in ("cli", "api")]
    assert fingerprints[0] == fingerprints[1]


def recorded_task(out: Path) -> dict:
    return json.loads((out / "tasks" / "rcb.json").read_text(encoding="utf-8"))


def test_the_made_up_scoring_option_enters_the_fingerprint_and_the_unscored_one_does_not(shifted):
    def fingerprint(**given: object) -> str:
        return RunSpec.create("rcb", "shifted", given).fingerprint()

    assert fingerprint(shift=1) != fingerprint() == fingerprint(note="first try")


def test_resume_refuses_another_value_of_the_made_up_scoring_option_and_takes_the_unscored_one(shifted, tmp_path):
    out = tmp_path / "out"
    assert call("-o", out, "--shift", 1).exit_code == 0
    refused = call("-o", out, "--resume", "--shift", 2)
    assert refused.exit_code == 2
    assert refused.output == (
        f"error: --resume continues the run in {out} as it was started, and these differ from it: "
        "solver_options.shift 1 -> 2; give none of these to continue it, or a new -o for a new run\n"
    )
    assert call("-o", out, "--resume", "--note", "second try").exit_code == 0
    assert recorded(out)["solver_options"] == {"shift": 1, "note": "second try"}
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["reused"] == ["rcb"]
