"""Prometheus gauges read from the batch ledger at scrape time, so they say what ``status`` says.

``ace_batch_samples{skillbook, state}`` sums the samples of the running batches by state
(queued, running, waiting_for_budget, done, failed, cancelled): per batch the same :class:`BatchStatus` counts
that ``ace-workers status`` prints, adding up to ``ace_batch_samples_total_size``.
``ace_batches{skillbook, state}`` counts the running and the recent batches by the state
``status`` names (running, done, done_with_failures, failed, cancelled): a batch whose every
sample failed is ``failed`` there, never ``done``. Every worker serving metrics reports the same
figures (they come from Redis, not from the worker): aggregate them with ``max``, not ``sum``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator

import redis
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..store.batches import BatchState, BatchStatus, BatchStore
from ..store.errors import BatchNotFoundError, CorruptDataError

__all__ = ["BATCH_STATES", "LedgerCollector", "STATES"]

logger = logging.getLogger(__name__)

STATES = ("queued", "running", "waiting_for_budget", "done", "failed", "cancelled")
# The states ``ace_batches`` counts batches in: every one, so a state with none reads 0.
BATCH_STATES = tuple(state.value for state in BatchState)
# A scrape reads at most this many running batches (one round trip each).
MAX_BATCHES = 1000
# And this many of the recent ones besides (finished ones, until their records expire).
RECENT_FOR_GAUGE = 200


class LedgerCollector(Collector):
    """Reads the running batches' counts from Redis on every scrape."""

    def __init__(self, batches: BatchStore) -> None:
        self.batches = batches

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families without values: registering the collector reads nothing from Redis."""
        yield from _families()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        samples, sizes, batches = _families()
        by_state: dict[tuple[str, str], int] = defaultdict(int)
        by_book: dict[str, int] = defaultdict(int)
        batch_states: dict[tuple[str, str], int] = defaultdict(int)
        try:
            running = self.batches.running()[:MAX_BATCHES]
            in_running = set(running)
            recent = [batch_id for batch_id, _ in self.batches.recent(RECENT_FOR_GAUGE)]
            for status in self._statuses(dict.fromkeys([*running, *recent])):
                batch_states[(status.skillbook, status.state.value)] += 1
                if status.batch_id not in in_running:
                    continue  # the sample gauges are of the running set's batches
                by_book[status.skillbook] += status.total
                for state, count in status.counts().items():
                    if state in STATES:
                        by_state[(status.skillbook, state)] += count
        except redis.RedisError as exc:  # a scrape must not fail for Redis: the gauges are left out
            logger.warning("batch gauges left out of this scrape: %s", exc)
            return
        for (skillbook, state), count in sorted(by_state.items()):
            samples.add_metric([skillbook, state], count)
        for skillbook, size in sorted(by_book.items()):
            sizes.add_metric([skillbook], size)
        for skillbook in sorted({book for book, _ in batch_states}):
            for state in BATCH_STATES:
                batches.add_metric([skillbook, state], batch_states.get((skillbook, state), 0))
        yield samples
        yield sizes
        yield batches

    def _statuses(self, batch_ids: Iterable[str]) -> Iterator[BatchStatus]:
        for batch_id in batch_ids:
            try:
                yield self.batches.status(batch_id)
            except (BatchNotFoundError, CorruptDataError):
                continue  # expired since it was listed, or not ours to read


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
    samples = GaugeMetricFamily(
        "ace_batch_samples",
        "Samples of the running batches, by skillbook and state (the ledger's counts).",
        labels=["skillbook", "state"],
    )
    sizes = GaugeMetricFamily(
        "ace_batch_samples_total_size",
        "Samples (inputs x epochs) of the running batches, by skillbook.",
        labels=["skillbook"],
    )
    batches = GaugeMetricFamily(
        "ace_batches",
        "Running and recent batches, by skillbook and state (failed: every sample failed).",
        labels=["skillbook", "state"],
    )
    return samples, sizes, batches
