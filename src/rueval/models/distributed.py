"""Data parallelism: a run started by `accelerate launch --num_processes N` (or torchrun) splits its
language model requests over the N processes, each with its own copy of the model on its own device.

This is the one place that knows about the launch. A plain run (no ``WORLD_SIZE`` above 1) finds
no world here and never imports accelerate. Under a launch every process plans the same requests;
``World.stream`` sorts them so that shared prefixes sit together and cuts the list into N shares
where neighbours share the least (between episodes, between items, never between an item's
options), so each process's prefix tree still shares what the one-process run would. Each process
computes its share (committing batches to the shared SQLite request cache as it goes), the shares
are gathered to the main process, and the others exit 0. Decisions about the run directory
(``on_main``) are taken once, by the main process, and sent to the others.

A process that fails sends its error to the gather and the main process stops the run naming it;
a process that dies or hangs ends the collectives after ``RUEVAL_DISTRIBUTED_TIMEOUT`` seconds
(and torchrun, under accelerate launch, stops the others when one exits with an error).
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any, TypeVar

from rueval.core.errors import RuevalError
from rueval.models.base import Request
from rueval.models.engine import KINDS

if TYPE_CHECKING:
    from rueval.models.engine import Engine

T = TypeVar("T")
TIMEOUT_ENV = "RUEVAL_DISTRIBUTED_TIMEOUT"
DEFAULT_TIMEOUT = 3 * 3600  # seconds a collective waits for the slowest process: a share can take hours
CUT_WINDOW = 1000  # at most this many requests either side of an even cut are searched for the best cut


@dataclass
class World:
    """This process's place in a launch: rank 0 is the main process, which scores and writes."""

    rank: int
    size: int
    device: str
    computed: list[int] = field(default_factory=list)  # after the gather: requests each process computed

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def on_main(self, decide: Callable[[], T]) -> T:
        """``decide()`` run by the main process only; its value (or its error) reaches every process."""
        outcome: list[Any] = [None]
        error: RuevalError | None = None
        if self.is_main:
            try:
                outcome = [(decide(), False)]
            except RuevalError as e:
                outcome, error = [(None, True)], e
        self._collective("sending the run's decisions", _broadcast, outcome)
        value, failed = outcome[0]
        if error is not None:
            raise error
        if failed:
            raise SystemExit(2)  # the main process reports it: one line, not one per process
        return value

    def stream(
        self, engine: Engine, requests: Sequence[Request], description: str
    ) -> Iterator[tuple[dict[Request, Any], set[Request]]]:
        """As ``Engine.stream`` over all the requests, on the main process: once, with every share's
        results. The other processes compute their share, hand it over and exit 0."""
        share = shares(requests, self.size)[self.rank]
        done: dict[Request, Any] = {}
        computed: set[Request] = set()
        error = None
        try:
            for so_far in engine.stream(share, f"{description}, process {self.rank + 1} of {self.size}"):
                done, computed = so_far  # every result so far: the last holds the whole share's
        except Exception as e:  # noqa: BLE001 - any failure goes to the main process, which stops the run naming it
            error = f"{type(e).__name__}: {e}" if not isinstance(e, RuevalError) else str(e)
        gathered: list[Any] | None = [None] * self.size if self.is_main else None
        self._collective("gathering the results", _gather, (done, computed, error), gathered)
        self.close()
        if gathered is None:  # not the main process: its share is handed over
            raise SystemExit(0 if error is None else 1)
        failed = [(rank, e) for rank, (_, _, e) in enumerate(gathered) if e is not None]
        if failed:
            rank, message = failed[0]
            raise RuevalError(f"process {rank + 1} of {self.size} failed: {message}")
        self.computed = [len(c) for _, c, _ in gathered]
        yield {r: v for d, _, _ in gathered for r, v in d.items()}, {r for _, c, _ in gathered for r in c}

    def note(self) -> str:
        return f"{self.size} processes computed {' + '.join(map(str, self.computed))} requests (data parallel)"

    def close(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()

    def _collective(self, what: str, call: Callable[..., None], *args: Any) -> None:
        try:
            call(*args)
        except (RuntimeError, ValueError) as e:  # torch's errors when a peer died or the timeout passed
            raise RuevalError(
                f"process {self.rank + 1} of {self.size}: {what} failed, another process died or took longer "
                f"than {timeout_seconds()} s ({TIMEOUT_ENV}): {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from None


def _broadcast(objects: list[Any]) -> None:
    import torch.distributed as dist

    dist.broadcast_object_list(objects, src=0)


def _gather(mine: Any, gathered: list[Any] | None) -> None:
    import torch.distributed as dist

    dist.gather_object(mine, gathered, dst=0)


@cache
def world() -> World | None:
    """The launch this process is part of; None for a plain run (nothing is imported)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    try:
        import torch
        import torch.distributed.nn  # before the group is made: see below
        from accelerate import PartialState
    except ImportError:
        raise RuevalError("several processes (accelerate launch) need accelerate: pip install 'rueval[lm]'") from None
    cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes") or not torch.cuda.is_available()
    # torch.distributed.nn takes the default group as default arguments when it is imported, and
    # transformers imports it: imported after the group is made, it would keep the group (and gloo's
    # threads) alive past destroy_process_group. Imported before, it holds nothing.
    state = PartialState(cpu=cpu, timeout=timedelta(seconds=timeout_seconds()))
    launch = World(state.process_index, state.num_processes, str(state.device))
    # Whatever way the process ends (an error, SystemExit), the group goes while the interpreter is
    # whole: left to interpreter teardown, gloo's threads can abort the process (SIGABRT).
    atexit.register(launch.close)
    return launch


def timeout_seconds() -> int:
    value = os.environ.get(TIMEOUT_ENV, str(DEFAULT_TIMEOUT))
    if not value.isdigit() or int(value) == 0:
        raise RuevalError(f"{TIMEOUT_ENV}={value}: expected a whole number of seconds above 0")
    return int(value)


def on_main(decide: Callable[[], T]) -> T:
    """``decide()``, taken once for the whole launch (by its main process); in a plain run, just ``decide()``."""
    launch = world()
    return decide() if launch is None else launch.on_main(decide)


def shares(requests: Sequence[Request], n: int) -> list[list[Request]]:
    """The requests in ``n`` near-equal shares: each kind (log-likelihoods, generations, which cost
    very differently) is cut into ``n`` runs of its prefix-sorted list, one run per share."""
    unique = list(dict.fromkeys(requests))
    by_kind = [
        _runs(sorted((r for r in unique if isinstance(r, kind)), key=sort_key), sort_key, n)
        for kind, _, sort_key in KINDS
    ]
    return [[request for runs in by_kind for request in runs[i]] for i in range(n)]


def _runs(ordered: list[Request], sort_key: Callable[[Any], str], n: int) -> list[list[Request]]:
    """``n`` runs of near-equal length; each cut is moved, by at most an eighth of a run, to where
    neighbours share the shortest prefix: between episodes or items rather than inside them."""
    keys = [sort_key(request) for request in ordered]
    reach = min(CUT_WINDOW, len(ordered) // (8 * n))

    def shared(cut: int) -> int:
        return len(os.path.commonprefix([keys[cut - 1], keys[cut]]))

    cuts = [0]
    for i in range(1, n):
        even = round(i * len(ordered) / n)
        window = range(max(cuts[-1] + 1, even - reach, 1), min(len(ordered) - 1, even + reach) + 1)
        cuts.append(min(window, key=lambda cut: (shared(cut), abs(cut - even)), default=max(cuts[-1], even)))
    cuts.append(len(ordered))
    return [ordered[start:end] for start, end in pairwise(cuts)]
