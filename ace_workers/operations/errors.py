"""The errors the operations layer itself raises (the layers below raise the rest)."""

from __future__ import annotations

from ..distributed.tenancy.errors import TenancyError

__all__ = ["FleetAdminRequiredError"]


class FleetAdminRequiredError(TenancyError, PermissionError):
    """Only the operator or a fleet-wide admin key may do this (tenants, API keys)."""

    def __init__(self, principal: str, action: str) -> None:
        self.principal = principal
        self.action = action
        super().__init__(
            f"{principal} may not {action}: that needs the operator or a fleet-wide admin key "
            "(tenant '*', role admin)"
        )
