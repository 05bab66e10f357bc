"""Errors of tenants, their keys and their limits, under ace-workers' root AceError (a busy provider is an
LLMError, which the worker retries)."""

from __future__ import annotations

from datetime import UTC, datetime

from ...errors import AceError, LLMError

__all__ = [
    "BudgetExhaustedError",
    "ForeignSkillbookError",
    "InvalidApiKeyError",
    "ProviderBusyError",
    "RoleTooLowError",
    "ScopeError",
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


class InvalidApiKeyError(TenancyError):
    """An API key that authenticates nobody: malformed, unknown or revoked (``key_id`` if it names one;
    ``source``, where it was given, such as ``--api-key`` or ``ACE_API_KEY``, if the caller knows)."""

    def __init__(self, key_id: str | None, problem: str, *, source: str = "") -> None:
        self.key_id = key_id
        self.problem = problem
        self.source = source
        named = f"API key {key_id!r}" if key_id else "the API key"
        given = f" given by {source}" if source else ""
        super().__init__(f"{named}{given}: {problem}")

    def given_by(self, source: str) -> InvalidApiKeyError:
        """The same refusal, naming where the key was given."""
        return InvalidApiKeyError(self.key_id, self.problem, source=source)


class ScopeError(TenancyError, PermissionError):
    """A key may not do this on this skillbook; names the key, its tenant and role, the skillbook,
    its owner and the role needed."""

    def __init__(
        self, *, key_id: str, key_tenant: str, key_role: str, skillbook: str, owner: str, needed: str
    ) -> None:
        self.key_id = key_id
        self.key_tenant = key_tenant
        self.key_role = key_role
        self.skillbook = skillbook
        self.owner = owner
        self.needed = needed
        super().__init__(self._message())

    def _message(self) -> str:
        return (
            f"key {self.key_id!r} (tenant {self.key_tenant!r}, role {self.key_role!r}) may not use "
            f"skillbook {self.skillbook!r} of tenant {self.owner!r} with role {self.needed!r}"
        )


class ForeignSkillbookError(ScopeError):
    """The skillbook belongs to another tenant than the key's."""

    def _message(self) -> str:
        return (
            f"key {self.key_id!r} of tenant {self.key_tenant!r} (role {self.key_role!r}) is refused "
            f"skillbook {self.skillbook!r}: tenant {self.owner!r} owns it (this needs role {self.needed!r} "
            f"with a key of tenant {self.owner!r})"
        )


class RoleTooLowError(ScopeError):
    """The key's tenant owns the skillbook, but its role is below the one needed."""

    def _message(self) -> str:
        return (
            f"key {self.key_id!r} of tenant {self.key_tenant!r} has role {self.key_role!r}: this needs "
            f"role {self.needed!r} on skillbook {self.skillbook!r} (tenant {self.owner!r})"
        )


class BudgetExhaustedError(TenancyError):
    """A tenant's budget for a model is spent for its window: the LLM call was not made.

    ``limit`` names the budget field (``tokens_per_day``, ``cost_per_month``, ...), ``spent`` what
    was spent and reserved of it, ``requested`` the refused call's estimate in the limit's unit
    (0 when not known: a call refused only once the budget is spent), ``resets_at`` when its
    window starts again (unix time, UTC midnight or the first of the month), and ``on_budget``
    what the tenant asked for: ``wait`` (defer the sample) or ``fail``.
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
        requested: float = 0.0,
    ) -> None:
        self.tenant = tenant
        self.model = model
        self.limit = limit
        self.spent = spent
        self.budget = budget
        self.resets_at = resets_at
        self.on_budget = on_budget
        self.requested = requested
        if requested > 0 and spent < budget:
            state = (
                f"has no room for the call ({spent:g} of {budget:g} spent or reserved, "
                f"the call needs about {requested:g})"
            )
        else:
            state = f"is spent ({spent:g} of {budget:g})"
        super().__init__(
            f"tenant {tenant!r}: budget {limit} for model {model!r} {state}; "
            f"it resets at {_utc(resets_at)}, or raise it with ace-workers tenant set {tenant}"
        )


class ProviderBusyError(LLMError):
    """The shared limiter kept a call waiting longer than its bound: the step is retried later."""

    def __init__(self, model: str, waited: float, wait: float) -> None:
        self.model = model
        self.waited = waited
        self.wait = wait
        super().__init__(
            f"model {model!r}: the fleet's rate limit kept this call waiting {waited:.1f} s and the "
            f"next slot is {wait:.1f} s away; the step will be retried"
        )


def _utc(moment: float) -> str:
    return datetime.fromtimestamp(moment, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
