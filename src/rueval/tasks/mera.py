"""MERA as a benchmark: the seven tasks rueval shares with it (rueval.data.mera_tasks) and MERA's
choice and classification tasks of its own (rueval.tasks.mera_choice) and its generative tasks
(rueval.tasks.mera_generative), read from
MERA's files and written as its submission. It has no total nor papers' rows in rueval, so its runs
are never ranked against RussianSuperGLUE's or TAPE's."""

from __future__ import annotations

from rueval.data.mera_tasks import MERA_TASKS, NAME
from rueval.tasks import mera_choice, mera_generative, rsg, tape
from rueval.tasks.benchmark import Benchmark

_SHARED = {task.name: task for task in (*rsg.TASKS, *tape.TASKS, *mera_choice.TASKS, *mera_generative.TASKS)}

BENCHMARK = Benchmark(
    name=NAME,
    title="MERA",
    tasks=tuple(_SHARED[name] for name in MERA_TASKS),
    submission="rueval.run.mera_export:export_mera",
)
