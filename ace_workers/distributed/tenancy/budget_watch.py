"""When a tenant's spent budget has room again: what a releaser of deferred samples asks.

:class:`BudgetWatch` is the one question the release of deferred samples needs answered
(``has_room(tenant)``); anything that can answer it fits, such as the fleet's shared limiter.
:class:`ParkedBudgetWatch` answers from what the refusals themselves reported: a limit has
room once its window reset (``resets_at`` passed) or once the tenant's budget for it was
raised above what was spent (or removed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Protocol

from .deferred_samples import DeferredSamples, Refusal
from .errors import UnknownTenantError
from .tenants import Tenant, TenantMap

__all__ = ["BudgetWatch", "LimiterBudgetWatch", "ParkedBudgetWatch", "RoomCheck", "limit_now"]


class BudgetWatch(Protocol):
    """Says whether a tenant's budget has room for its deferred samples now."""

    def has_room(self, tenant: str) -> bool:
        """True if a deferred sample of ``tenant`` sent now would find budget to spend."""


def limit_now(tenants: TenantMap, tenant: str, model: str, limit: str) -> float | None:
    """The tightest value of ``limit`` over the budgets a call of ``tenant`` to ``model`` counts against.

    None if no budget sets it (or the tenant is gone): nothing limits it any more.
    """
    try:
        budgets = tenants.get(tenant).budget_for(model)
    except UnknownTenantError:
        return None
    values = [value for budget in budgets if (value := getattr(budget, limit, None)) is not None]
    return min(values) if values else None


class ParkedBudgetWatch:
    """Room once every limit that refused a call of the tenant reset or was raised past its spend."""

    def __init__(
        self,
        deferrals: DeferredSamples,
        tenants: Callable[[], TenantMap],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``tenants``: the current tenants (read fresh: a raised budget must be seen at once)."""
        self.deferrals = deferrals
        self.tenants = tenants
        self.clock = clock

    def has_room(self, tenant: str) -> bool:
        """True once none of ``tenant``'s recorded refusals holds (those that no longer hold are dropped)."""
        refusals = self.deferrals.refusals(tenant)
        if not refusals:
            return True
        tenants, now = self.tenants(), self.clock()
        lifted = [refusal for refusal in refusals if self._lifted(tenants, tenant, refusal, now)]
        self.deferrals.forget_refusals(tenant, lifted)
        return len(lifted) == len(refusals)

    @staticmethod
    def _lifted(tenants: TenantMap, tenant: str, refusal: Refusal, now: float) -> bool:
        if now >= refusal.resets_at:
            return True
        limit = limit_now(tenants, tenant, refusal.model, refusal.limit)
        # Raised enough for the refused call itself, not just past what was spent: a call refused
        # because its estimate did not fit would otherwise be sent again only to be refused again.
        return limit is None or refusal.fits(limit, refusal.spent)


class RoomCheck(Protocol):
    """What the fleet's limiter answers: whether ``tenant``'s budgets (those of ``model``) have room now."""

    def has_room(
        self, tenant: Tenant, model: str | None = None, needs: Mapping[str, float] | None = None
    ) -> bool:
        """True if the next call (of ``model``, if named; its estimate ``needs`` by limit) would go."""
        ...


class LimiterBudgetWatch:
    """Room as the fleet's limiter counts it, for every model a call of the tenant was refused for."""

    def __init__(
        self, limiter: RoomCheck, deferrals: DeferredSamples, tenants: Callable[[], TenantMap]
    ) -> None:
        self.limiter = limiter
        self.deferrals = deferrals
        self.tenants = tenants

    def has_room(self, tenant: str) -> bool:
        """True if the limiter has room for each model whose budget refused a call of ``tenant``."""
        try:
            stored = self.tenants().get(tenant)
        except UnknownTenantError:
            return True  # removed: its skillbooks belong to 'default' now, whose budget decides when they run
        refusals = self.deferrals.refusals(tenant)
        models = sorted({refusal.model for refusal in refusals})
        # The refusals themselves first: a budget spent where the limiter does not count (no spend of
        # its model in the limiter) holds until its window resets or the budget is raised.
        tenants, now = self.tenants(), time.time()
        if not all(ParkedBudgetWatch._lifted(tenants, tenant, refusal, now) for refusal in refusals):
            return False
        if not models:
            return self.limiter.has_room(stored)
        # Room for the refused calls themselves: each limit's largest refused estimate must fit.
        needs: dict[str, dict[str, float]] = {}
        for refusal in refusals:
            limits = needs.setdefault(refusal.model, {})
            limits[refusal.limit] = max(limits.get(refusal.limit, 0.0), refusal.requested)
        roomy = all(self.limiter.has_room(stored, model, needs[model]) for model in models)
        if roomy:
            self.deferrals.forget_refusals(tenant, self.deferrals.refusals(tenant))
        return roomy
