"""--resume: the run in OUT continues with the spec it was started with (its run.json). Options typed
beside --resume must say what it says: those that change no number (--timeout, --log-samples, ...)
apply to the rest of the run; any other that differs is an error listing the differences. Which keys
of run.json an option sets follows from the options' declarations (RunSpec's fields and the solver
families' options)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rueval.core.errors import RuevalError
from rueval.core.option_fields import declarations
from rueval.run.spec import JSON_KEYS, RunSpec, scored
from rueval.run.store import SPEC_FILE, RunStore, settings_differences
from rueval.solvers.options import GIVEN_KEYS

# what the options typed need to be read as a spec: the recorded ones unless typed
KEPT = ("model", "tasks", "include_path")
# consent to run code from elsewhere (run.json's key, under solver_options or at its top): each command gives it
# anew, run.json never gives it for a user
CONSENTS = {
    "solver_options.trust_remote_code": "--trust-remote-code",
    "trust_task_code": "--trust-task-code",
    "confirm_run_unsafe_code": "--confirm-run-unsafe-code",
}


def resumed(out: Path, typed: Iterable[str], asked: Callable[..., RunSpec]) -> RunSpec:
    """The spec of the run in ``out`` with the options ``typed`` (by their parameter names) applied;
    ``asked(**kept)``: the spec the options given ask for, with ``kept`` (KEPT's recorded values, for
    those not typed) in place of theirs."""
    typed = list(typed)
    stored = RunStore(out).load_spec()
    recorded = stored.to_json()
    kept = {name: getattr(stored, name) for name in KEPT if name not in typed}
    if "tasks" in kept:  # a run of rueval's tasks or of task files: its names either way
        kept["tasks"] = stored.tasks + stored.task_files
    wanted = asked(**kept).to_json()
    for consent, flag in CONSENTS.items():
        if _given(recorded, consent) and not _given(wanted, consent):
            raise RuevalError(
                f"{out / SPEC_FILE}: {consent}: the run was started with {flag}; --resume does not give that "
                f"consent again for you: add {flag} to run that code"
            )
    if not typed:
        return stored
    merged = {**recorded, "solver_options": dict(recorded["solver_options"])}
    for name in typed:
        for key in keys_set_by(name):
            where, _, leaf = key.partition(".")
            if leaf:
                merged[where][leaf] = wanted[where].get(leaf)
            else:
                merged[key] = wanted[key]
    differences = settings_differences(scored(recorded), scored(merged))
    if differences:
        raise RuevalError(
            f"--resume continues the run in {out} as it was started, and these differ from it: {differences}; "
            "give none of these to continue it, or a new -o for a new run"
        )
    return RunSpec.from_json(merged, str(out / SPEC_FILE))


def _given(settings: dict[str, Any], key: str) -> bool:
    where, _, leaf = key.partition(".")
    return bool(settings.get(where, {}).get(leaf) if leaf else settings.get(where))


def keys_set_by(option: str) -> tuple[str, ...]:
    """The keys of a spec's JSON an option sets: the fields it is declared for (by its name or their
    ``set_by``; the model names the family too), else one of the model's options in ``solver_options``."""
    fields = [name for name, declared in declarations(RunSpec).items() if option in (name, *declared.set_by)]
    keys = tuple(JSON_KEYS.get(name, name) for name in fields) + (("family",) if "model" in fields else ())
    return keys or (f"solver_options.{GIVEN_KEYS.get(option, option)}",)
