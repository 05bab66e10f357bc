"""What each tenant spent against each of its budgets, and how many of its samples wait for budget.

The spend comes from a :class:`UsageSource` (the fleet's limiter: ``usage(tenant)`` with one
window per model and day or month); the budgets from the tenants; the waiting samples from
the parked deferrals. One function builds the report, so ``ace-workers tenant usage`` and the
Prometheus gauges cannot drift apart.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..store.keys import DEFAULT_TENANT
from .deferred_samples import DeferredSamples
from .limiter import TenantUsage, WindowUsage, window_periods
from .tenants import ALL_MODELS, Tenant, TenantMap

__all__ = [
    "WINDOWS",
    "TenantReport",
    "UsageReport",
    "UsageSource",
    "WindowRow",
    "usage_report",
]

# The budget windows, in the order they are shown.
WINDOWS = ("day", "month")


class UsageSource(Protocol):
    """Where spend is counted (the fleet's limiter)."""

    def usage(self, tenant: str) -> TenantUsage:
        """``tenant``'s spend per model and window."""
        ...


@dataclass(frozen=True)
class WindowRow:
    """Spend on one model in one window against the tenant's budget for it (None: no such budget)."""

    model: str
    window: str
    tokens: int
    cost: float
    requests: int
    token_budget: int | None
    cost_budget: float | None
    resets_at: float

    @property
    def token_share(self) -> float | None:
        """The share of the token budget spent (1.0: all of it); None without a token budget."""
        return _share(self.tokens, self.token_budget)

    @property
    def cost_share(self) -> float | None:
        """The share of the cost budget spent; None without a cost budget."""
        return _share(self.cost, self.cost_budget)

    def to_dict(self) -> dict[str, Any]:
        """The row as ``tenant usage --json`` prints it."""
        return {
            "model": self.model,
            "window": self.window,
            "tokens": self.tokens,
            "cost": self.cost,
            "requests": self.requests,
            "token_budget": self.token_budget,
            "token_share": self.token_share,
            "cost_budget": self.cost_budget,
            "cost_share": self.cost_share,
            "resets_at": self.resets_at,
        }


@dataclass(frozen=True)
class TenantReport:
    """One tenant's spend per model and window, and its samples waiting for budget."""

    tenant: str
    on_budget: str
    deferred: int
    rows: list[WindowRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The tenant's part of ``tenant usage --json``."""
        return {
            "tenant": self.tenant,
            "on_budget": self.on_budget,
            "waiting_for_budget": self.deferred,
            "usage": [row.to_dict() for row in self.rows],
        }


@dataclass(frozen=True)
class UsageReport:
    """Every reported tenant, by name."""

    tenants: list[TenantReport]

    def to_dict(self) -> dict[str, Any]:
        """The document ``tenant usage --json`` prints."""
        return {"tenants": [tenant.to_dict() for tenant in self.tenants]}


def usage_report(
    tenants: TenantMap,
    deferrals: DeferredSamples,
    source: UsageSource,
    names: Iterable[str] | None = None,
    *,
    now: float | None = None,
) -> UsageReport:
    """The report on ``names`` (default: every stored tenant, ``default``, and any with deferred samples).

    Raises:
        UnknownTenantError: a name that is no tenant.
    """
    if names is None:
        names = sorted({*tenants.tenants, DEFAULT_TENANT, *deferrals.tenants()})
    reports = []
    for name in names:
        tenant = tenants.get(name) if name in tenants.tenants or name == DEFAULT_TENANT else Tenant(name)
        windows = list(source.usage(name).windows)
        rows = _rows(tenant, windows, time.time() if now is None else now)
        reports.append(TenantReport(name, tenant.on_budget, deferrals.count(name), rows))
    return UsageReport(reports)


def _rows(tenant: Tenant, windows: list[WindowUsage], now: float) -> list[WindowRow]:
    """A row per model and window that has a budget or spend: all models first, then by name."""
    spent = {(w.model, w.window): w for w in windows}
    budgets = {budget.model: budget for budget in tenant.budgets if budget.limited}
    models = sorted({*budgets, *(model for model, _ in spent)}, key=lambda m: (m != ALL_MODELS, m))
    rows = []
    for model in models:
        budget = budgets.get(model)
        for window in WINDOWS:
            usage = spent.get((model, window))
            token_budget = getattr(budget, f"tokens_per_{window}") if budget else None
            cost_budget = getattr(budget, f"cost_per_{window}") if budget else None
            if usage is None and token_budget is None and cost_budget is None:
                continue
            rows.append(
                WindowRow(
                    model=model,
                    window=window,
                    tokens=usage.tokens if usage else 0,
                    cost=usage.cost if usage else 0.0,
                    requests=usage.requests if usage else 0,
                    token_budget=token_budget,
                    cost_budget=cost_budget,
                    resets_at=usage.resets_at if usage else window_periods(now)[window][1],
                )
            )
    return rows


def _share(spent: float, budget: float | None) -> float | None:
    if budget is None:
        return None
    return spent / budget if budget > 0 else 1.0  # a budget of 0 is spent before anything is
