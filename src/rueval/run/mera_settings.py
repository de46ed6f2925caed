"""MERA's evaluation settings, which a language model's run on MERA's files follows by default (their
sources: rueval.data.mera_tasks): each task's number of demonstrations, each test item's drawn in
turn by one generator of MERA's seed, and greedy generation with MERA's stop sequence and token limit.
The run's spec holds them resolved (``RunSpec.mera``, and the generation in its LM options), so they
enter its fingerprint: a run with MERA's settings never shares results with one without them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rueval.core.errors import RuevalError
from rueval.data.mera_tasks import FEWSHOT_SEED, GENERATION_STOP, MAX_GEN_TOKS, MERA
from rueval.results.checks import Checker
from rueval.solvers.lm import GenerationSettings
from rueval.solvers.options import LMOptions

MERA_GENERATION = GenerationSettings(do_sample=False, max_gen_toks=MAX_GEN_TOKS, until=GENERATION_STOP)


@dataclass(frozen=True)
class MeraSettings:
    """How a run on MERA's files draws demonstrations: ``shots`` gives each task's number (MERA's own;
    empty: the run's --shots for every task), each item's drawn in turn by one generator of
    ``fewshot_seed``."""

    shots: tuple[tuple[str, int], ...] = ()
    fewshot_seed: int = FEWSHOT_SEED

    def __post_init__(self) -> None:
        for task, k in self.shots:
            if task not in MERA or k < 0:
                raise RuevalError(f"MERA's settings: {task} {k}: expected a MERA task and a number of demonstrations")

    @classmethod
    def of(cls, tasks: Sequence[str], own_shots: bool) -> MeraSettings:
        """MERA's settings for ``tasks``; ``own_shots``: each task's number of demonstrations MERA's."""
        return cls(tuple((task, MERA[task].shots) for task in tasks if task in MERA) if own_shots else ())

    def shots_of(self, task: str) -> tuple[int, ...] | None:
        """The task's number of demonstrations under these settings; None: the run's --shots."""
        return next(((k,) for name, k in self.shots if name == task), None)

    def to_json(self) -> dict[str, Any]:
        return {"shots": dict(self.shots), "fewshot_seed": self.fewshot_seed}

    @classmethod
    def from_json(cls, data: Any, check: Checker, at: str) -> MeraSettings:
        data = check.obj(data, at.rstrip("."))
        shots = check.obj(data.get("shots", {}), f"{at}shots")
        for task, k in shots.items():
            if not isinstance(k, int) or isinstance(k, bool):
                raise check.fail(f"{at}shots.{task}", f"expected a number of demonstrations, got {k!r:.40}")
        seed = data.get("fewshot_seed", FEWSHOT_SEED)
        with check.refusals(at.rstrip(".")):
            return cls(tuple(shots.items()), int(check.number(seed, f"{at}fewshot_seed")))


def with_mera(tasks: Sequence[str], options: Any, own_shots: bool) -> tuple[MeraSettings | None, Any]:
    """A language model's settings on MERA's files: MERA's (``own_shots``: its numbers of
    demonstrations too) and its generation under the options given (lm-eval's --gen_kwargs update a
    task's generation_kwargs, key by key). Other solvers take none of them."""
    if not isinstance(options, LMOptions):
        return None, options
    generation = merged(MERA_GENERATION, options.generation)
    return MeraSettings.of(tasks, own_shots), replace(options, generation=generation)


def merged(defaults: GenerationSettings, given: GenerationSettings) -> GenerationSettings:
    """``defaults`` with each key ``given`` sets replaced."""
    keys: Mapping[str, Any] = {**defaults.describe(), **given.describe()}
    return GenerationSettings.from_mapping(keys)
