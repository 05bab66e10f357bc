"""DistributedRunner: the in-process runners' run() interface, with the work done by Celery workers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipeline import SampleResult

from ...core.context import ACEStepContext
from ..store.label_names import parse_skillbook_ref
from .fleet_check import require_workers
from .producer import BatchHandle, Producer

__all__ = ["DistributedRunner"]


class DistributedRunner:
    """Run a recipe over inputs on the workers, returning SampleResults like TraceAnalyser and ACE.

    ``DistributedRunner(producer, skillbook="support", recipe="ace")`` stands in
    for ``ACE.from_roles(...)``: the same ``run(items, epochs, wait)`` call, but
    every step is a task on the queues and the skillbook lives in Redis.
    ``skillbook="support@prod"`` serves the agent label ``prod``'s version while
    learning writes ``support``'s head; ``canary`` sends that share to label ``canary``.
    """

    def __init__(
        self,
        producer: Producer,
        *,
        skillbook: str,
        recipe: str = "trace_analyser",
        canary: float | None = None,
    ) -> None:
        self.producer = producer
        self.ref = parse_skillbook_ref(skillbook)
        self.skillbook_name = self.ref.name
        self.recipe = recipe
        self.canary = canary
        self.last_batch: BatchHandle | None = None

    def run(
        self, items: Iterable[Any], epochs: int = 1, *, wait: bool = True, timeout: float | None = None
    ) -> list[SampleResult[ACEStepContext]]:
        """Enqueue ``items`` as one batch; with ``wait`` return every sample's result.

        With ``wait=False`` it returns [] at once; follow ``last_batch`` and call
        ``wait_for_background()`` then ``results()``.

        Raises:
            NoWorkersError: before anything is sent, when a queue the recipe uses has no worker.
        """
        require_workers(self.producer.dispatcher, self.recipe, self.skillbook_name)
        enqueue = self.producer.enqueue_samples if self.recipe == "ace" else self.producer.enqueue_traces
        self.last_batch = enqueue(items, str(self.ref), epochs, recipe=self.recipe, canary=self.canary)
        if not wait:
            return []
        self.last_batch.wait(timeout, check_workers=False)  # checked above
        return self.last_batch.results()

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Block until the last batch has finished; TimeoutError after ``timeout`` s."""
        if self.last_batch is not None:
            self.last_batch.wait(timeout)

    def results(self) -> list[SampleResult[ACEStepContext]]:
        """The results of the last batch so far."""
        return self.last_batch.results() if self.last_batch is not None else []

    @property
    def learning_stats(self) -> dict[str, int]:
        """Progress of the last batch: done, failed, in flight."""
        if self.last_batch is None:
            return {"active": 0, "completed": 0, "failed": 0}
        status = self.last_batch.status()
        return {
            "active": status.total - status.done - status.failed,
            "completed": status.done,
            "failed": status.failed,
        }
