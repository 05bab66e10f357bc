"""Prometheus gauges of the tenants, read at scrape time: spend against budget, samples waiting for budget.

``ace_tenant_spend{tenant, model, window, kind}`` (kind: tokens, cost, requests) and
``ace_tenant_budget{tenant, model, window, kind}`` (kind: tokens, cost; only the limits that
are set) come from the same report as ``ace-workers tenant usage``; ``ace_tenant_waiting_samples
{tenant}`` counts the step messages parked for a spent budget. Like the batch gauges they come
from Redis, so every worker reports the same figures: aggregate them with ``max``, not ``sum``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import redis
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..store.errors import CorruptDataError
from ..tenancy.deferred_samples import DeferredSamples
from ..tenancy.tenants import TenantRegistry
from ..tenancy.usage import UsageSource, usage_report

__all__ = ["TenantCollector"]

logger = logging.getLogger(__name__)


class TenantCollector(Collector):
    """Reads the tenants' spend, budgets and waiting samples on every scrape."""

    def __init__(
        self,
        registry: TenantRegistry,
        deferrals: DeferredSamples,
        source: UsageSource,
    ) -> None:
        """``source``: the fleet's limiter, whose spend windows are read at each scrape."""
        self.registry = registry
        self.deferrals = deferrals
        self.source = source

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families without values: registering the collector reads nothing from Redis."""
        yield from _families()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        spend, budget, waiting = _families()
        try:
            report = usage_report(self.registry.map(), self.deferrals, self.source)
        except (redis.RedisError, CorruptDataError) as exc:  # a scrape must not fail for Redis
            logger.warning("tenant gauges left out of this scrape: %s", exc)
            return
        for tenant in report.tenants:
            waiting.add_metric([tenant.tenant], tenant.deferred)
            for row in tenant.rows:
                labels = [tenant.tenant, row.model, row.window]
                spend.add_metric([*labels, "tokens"], row.tokens)
                spend.add_metric([*labels, "cost"], row.cost)
                spend.add_metric([*labels, "requests"], row.requests)
                if row.token_budget is not None:
                    budget.add_metric([*labels, "tokens"], row.token_budget)
                if row.cost_budget is not None:
                    budget.add_metric([*labels, "cost"], row.cost_budget)
        yield spend
        yield budget
        yield waiting


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
    labels = ["tenant", "model", "window", "kind"]
    spend = GaugeMetricFamily(
        "ace_tenant_spend",
        "A tenant's LLM spend in the current UTC day or month, by model ('*': all) and kind "
        "(tokens, cost in USD, requests).",
        labels=labels,
    )
    budget = GaugeMetricFamily(
        "ace_tenant_budget",
        "A tenant's budget per UTC day or month, by model ('*': all) and kind (tokens, cost in USD).",
        labels=labels,
    )
    waiting = GaugeMetricFamily(
        "ace_tenant_waiting_samples",
        "Step messages of a tenant parked because its budget is spent (samples waiting for budget).",
        labels=["tenant"],
    )
    return spend, budget, waiting
