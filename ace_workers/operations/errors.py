"""The errors the operations layer itself raises (the layers below raise the rest)."""

from __future__ import annotations

from ..distributed.tenancy.errors import TenancyError
from ..errors import AceError

__all__ = ["ExpectRequiredError", "FleetAdminRequiredError"]


class FleetAdminRequiredError(TenancyError, PermissionError):
    """Only the operator or a fleet-wide admin key may do this (tenants, API keys)."""

    def __init__(self, principal: str, action: str) -> None:
        self.principal = principal
        self.action = action
        super().__init__(
            f"{principal} may not {action}: that needs the operator or a fleet-wide admin key "
            "(tenant '*', role admin)"
        )


class ExpectRequiredError(AceError, ValueError):
    """A rollback or label move named no ``expect`` (the version its caller saw): nothing changed."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(
            f"{what}: expect is required (the version you saw; for a label not set yet, empty), "
            "so that a change made meanwhile is not undone unseen; nothing was changed"
        )
