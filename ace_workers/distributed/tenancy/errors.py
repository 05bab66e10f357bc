"""Errors of tenants, their keys and their limits, under ace-workers' root AceError."""

from __future__ import annotations

from ...errors import AceError

__all__ = [
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
