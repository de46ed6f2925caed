"""A run: its specification (RunSpec), the pipeline (prepare -> reuse -> predict -> score and record
-> summarise), its predict stage, the run directory's store, diagnostics, robustness within a run,
and the submissions made from a model or a run (the RSG leaderboard zip, MERA's export)."""

from rueval.run.pipeline import run
from rueval.run.spec import RunSpec
from rueval.run.store import RunStore

__all__ = ["RunSpec", "RunStore", "run"]
