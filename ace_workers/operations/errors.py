"""The errors the operations layer itself raises (the layers below raise the rest)."""

from __future__ import annotations

from ..distributed.store.errors import StoreError
from ..distributed.tenancy.errors import TenancyError

__all__ = ["BatchNotResumableError", "FleetAdminRequiredError"]


class FleetAdminRequiredError(TenancyError, PermissionError):
    """Only the operator or a fleet-wide admin key may do this (tenants, API keys)."""

    def __init__(self, principal: str, action: str) -> None:
        self.principal = principal
        self.action = action
        super().__init__(
            f"{principal} may not {action}: that needs the operator or a fleet-wide admin key "
            "(tenant '*', role admin)"
        )


class BatchNotResumableError(StoreError):
    """A batch whose producer died while storing its inputs: nothing of it can be sent again."""

    def __init__(self, batch_id: str, stored: int, per_epoch: int) -> None:
        self.batch_id = batch_id
        self.stored = stored
        self.per_epoch = per_epoch
        super().__init__(
            f"batch {batch_id} stores {stored} of its {per_epoch} inputs (its producer died while "
            "storing them): it cannot be resumed; cancel it and send the inputs again"
        )
