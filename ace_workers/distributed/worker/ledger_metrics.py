"""Prometheus gauges read from the batch ledger at scrape time, so they say what ``status`` says.

``ace_batch_samples{skillbook, state}`` sums the samples of the running batches by state
(queued, running, waiting_for_budget, done, failed, cancelled): per batch the same :class:`BatchStatus` counts
that ``ace-workers status`` prints, adding up to ``ace_batch_samples_total_size``. Every
worker serving metrics reports the same figures (they come from Redis, not from the
worker): aggregate them with ``max``, not ``sum``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator

import redis
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..store.batches import BatchStore
from ..store.errors import BatchNotFoundError, CorruptDataError

__all__ = ["LedgerCollector", "STATES"]

logger = logging.getLogger(__name__)

STATES = ("queued", "running", "waiting_for_budget", "done", "failed", "cancelled")
# A scrape reads at most this many running batches (one round trip each).
MAX_BATCHES = 1000


class LedgerCollector(Collector):
    """Reads the running batches' counts from Redis on every scrape."""

    def __init__(self, batches: BatchStore) -> None:
        self.batches = batches

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families without values: registering the collector reads nothing from Redis."""
        yield from _families()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        samples, sizes = _families()
        by_state: dict[tuple[str, str], int] = defaultdict(int)
        by_book: dict[str, int] = defaultdict(int)
        try:
            running = self.batches.running()[:MAX_BATCHES]
            for batch_id in running:
                try:
                    status = self.batches.status(batch_id)
                except (BatchNotFoundError, CorruptDataError):
                    continue  # expired since it was listed, or not ours to read
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
        yield samples
        yield sizes


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
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
    return samples, sizes
