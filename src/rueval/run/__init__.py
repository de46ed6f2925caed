"""A run: the pipeline (load -> predict -> score -> diagnose -> record -> summarise), its predict
stage, the run directory's store, diagnostics, and robustness within a run."""

from rueval.run.pipeline import run
from rueval.run.store import RunStore

__all__ = ["RunStore", "run"]
