"""Errors of tenants, their keys and their limits, under ace-workers' root AceError."""

from __future__ import annotations

from datetime import UTC, datetime

from ...errors import AceError

__all__ = [
    "BudgetExhaustedError",
    "InvalidTenantError",
    "TenancyError",
    "TenantConflictError",
    "TenantExistsError",
    "UnknownTenantError",
]


class TenancyError(AceError):
    """A tenant, an API key or a limit could not be read, changed or applied."""


class InvalidTenantError(TenancyError, ValueError):
    """A tenant's name or one of its fields is not valid; ``field`` names which."""

    def __init__(self, field: str, value: object, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"tenant {field} {value!r}: {problem}")


class UnknownTenantError(TenancyError, LookupError):
    """No tenant of this name exists."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        listed = ", ".join(known) if known else "none yet (ace-workers tenant add NAME)"
        super().__init__(f"no tenant {name!r}; the tenants are: {listed}")


class TenantExistsError(TenancyError):
    """``tenant add`` named a tenant that exists already."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"tenant {name!r} exists already; change it with ace-workers tenant set {name}")


class TenantConflictError(TenancyError, ValueError):
    """Two tenants would own the same skillbook, or claim the same name prefix."""

    def __init__(self, name: str, other: str, what: str) -> None:
        self.name = name
        self.other = other
        self.what = what
        super().__init__(f"tenant {name!r} cannot own {what}: tenant {other!r} does; remove it there first")


class BudgetExhaustedError(TenancyError):
    """A tenant's budget for a model is spent for its window: the LLM call was not made.

    ``limit`` names the budget field (``tokens_per_day``, ``cost_per_month``, ...), ``resets_at``
    is when its window starts again (unix time, UTC midnight or the first of the month), and
    ``on_budget`` is what the tenant asked for: ``wait`` (defer the sample) or ``fail``.
    """

    def __init__(
        self,
        tenant: str,
        model: str,
        limit: str,
        *,
        spent: float,
        budget: float,
        resets_at: float,
        on_budget: str = "wait",
    ) -> None:
        self.tenant = tenant
        self.model = model
        self.limit = limit
        self.spent = spent
        self.budget = budget
        self.resets_at = resets_at
        self.on_budget = on_budget
        super().__init__(
            f"tenant {tenant!r}: budget {limit} for model {model!r} is spent ({spent:g} of {budget:g}); "
            f"it resets at {_utc(resets_at)}, or raise it with ace-workers tenant set {tenant}"
        )


def _utc(moment: float) -> str:
    return datetime.fromtimestamp(moment, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
