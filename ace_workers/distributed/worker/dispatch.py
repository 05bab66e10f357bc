"""The seam between the fleet's scheduling and the broker: what is sent, not how.

Admission, deferrals, reconciliation, epochs and dead letters decide *what* goes out (a sample's
chain from some step, the hand-off of an admission grant) and ask *whether* a queue is served or
holds messages; a :class:`Dispatcher` does the sending and the asking. The Celery one lives in
:mod:`.celery_dispatch`; :class:`InProcessDispatcher` records what would be sent, as Dramatiq's
``StubBroker`` does, so the scheduling logic is tested against a real Redis without a broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .runtime import WorkerRuntime

__all__ = ["Dispatcher", "HandOff", "InProcessDispatcher", "SampleChain", "StepMessage"]


@dataclass(frozen=True)
class StepMessage:
    """One step task of a sample's chain: the queue it goes to, the step's name, the task's kwargs."""

    queue: str
    step: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class SampleChain:
    """A sample's step messages from one step on; the first gets ``payload``, each next one the result."""

    payload: dict[str, Any]
    steps: tuple[StepMessage, ...]

    @property
    def first(self) -> StepMessage:
        """The step the chain starts with."""
        return self.steps[0]


@dataclass(frozen=True)
class HandOff:
    """An admission grant whose sending a worker of ``queue`` is asked to do (``ace.admit``)."""

    batch_id: str
    queue: str


class Dispatcher(Protocol):
    """Sends what scheduling decided and answers what it asks of the queues.

    ``runtime`` is the process's: the stores and settings scheduling reads.

    Every method raises :class:`~.errors.BrokerUnavailable` when the broker cannot be reached.
    """

    runtime: WorkerRuntime

    def send_chain(self, chain: SampleChain) -> None:
        """Send a sample's chain: its first step now, each next one when the step before it finished."""
        ...

    def hand_off(self, batch_id: str, queue: str) -> None:
        """Ask a worker of ``queue`` to send what ``batch_id`` was admitted (see admission.py)."""
        ...

    def queue_consumers(self, queues: Iterable[str], timeout: float) -> dict[str, list[str]]:
        """The workers consuming each of ``queues`` (a queue nobody serves is absent); waits at most
        ``timeout`` seconds, and only that long when some queue has no consumer."""
        ...

    def queue_depths(self, queues: Iterable[str]) -> dict[str, int]:
        """Messages waiting in each queue (0 for one the broker does not know)."""
        ...

    def tasks_done(self, workers: Iterable[str], timeout: float) -> dict[str, dict[str, int]]:
        """Per worker that answers within ``timeout``: the tasks it has taken since it started, by
        task name (Celery's ``inspect stats`` ``total``; it counts no failures)."""
        ...


@dataclass
class InProcessDispatcher:
    """A dispatcher that keeps what it is given: nothing leaves the process.

    ``chains`` and ``hand_offs`` are what was sent, in order; a chain counts as waiting on its
    first step's queue (:meth:`queue_depths`) until :meth:`take` removes it. ``consumers``
    answers :meth:`queue_consumers` (by queue, the worker names serving it), ``done``
    :meth:`tasks_done` (by worker, its task counts).
    """

    runtime: WorkerRuntime
    consumers: Mapping[str, list[str]] = field(default_factory=dict)
    done: Mapping[str, dict[str, int]] = field(default_factory=dict)
    chains: list[SampleChain] = field(default_factory=list)
    hand_offs: list[HandOff] = field(default_factory=list)

    def send_chain(self, chain: SampleChain) -> None:
        self.chains.append(chain)

    def hand_off(self, batch_id: str, queue: str) -> None:
        self.hand_offs.append(HandOff(batch_id, queue))

    def queue_consumers(self, queues: Iterable[str], timeout: float) -> dict[str, list[str]]:
        return {queue: list(self.consumers[queue]) for queue in queues if self.consumers.get(queue)}

    def tasks_done(self, workers: Iterable[str], timeout: float) -> dict[str, dict[str, int]]:
        return {worker: dict(self.done[worker]) for worker in workers if worker in self.done}

    def queue_depths(self, queues: Iterable[str]) -> dict[str, int]:
        waiting = [chain.first.queue for chain in self.chains]
        return {queue: waiting.count(queue) for queue in queues}

    def take(self) -> list[SampleChain]:
        """The chains sent so far, removed: as if workers took their first steps off the queues."""
        taken, self.chains = self.chains, []
        return taken

    def take_hand_offs(self) -> list[HandOff]:
        """The hand-offs sent so far, removed."""
        taken, self.hand_offs = self.hand_offs, []
        return taken

    def samples(self) -> list[tuple[str, int, int]]:
        """(batch id, epoch, sample index) of each chain waiting, in the order sent."""
        return [
            (chain.first.kwargs["batch_id"], chain.first.kwargs["epoch"], chain.first.kwargs["sample_index"])
            for chain in self.chains
        ]
