"""The errors the operations layer itself raises (the layers below raise the rest)."""

from __future__ import annotations

from ..counts import counted
from ..distributed.store.errors import StoreError
from ..distributed.tenancy.errors import TenancyError
from ..errors import AceError

__all__ = [
    "AdminRoleRequiredError",
    "BatchNotResumableError",
    "ExpectRequiredError",
    "FleetAdminRequiredError",
    "FleetBusyError",
    "IntakeBodyError",
    "IntakeBodyTooLargeError",
    "TenantBusyError",
]


class FleetAdminRequiredError(TenancyError, PermissionError):
    """Only the operator or a fleet-wide admin key may do this (tenants, API keys)."""

    def __init__(self, principal: str, action: str) -> None:
        self.principal = principal
        self.action = action
        super().__init__(
            f"{principal} may not {action}: that needs the operator or a fleet-wide admin key "
            "(tenant '*', role admin)"
        )


class AdminRoleRequiredError(TenancyError, PermissionError):
    """Only role admin (the operator, a fleet-wide admin key, or the tenant's own admin key) may do this."""

    def __init__(self, principal: str, role: str, action: str) -> None:
        self.principal = principal
        self.role = role
        self.action = action
        super().__init__(
            f"{principal} has role {role!r}: to {action} needs role admin (the fleet's or its tenant's)"
        )


class ExpectRequiredError(AceError, ValueError):
    """A rollback or label move named no ``expect`` (the version its caller saw): nothing changed."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(
            f"{what}: expect is required (the version you saw; for a label not set yet, empty), "
            "so that a change made meanwhile is not undone unseen; nothing was changed"
        )


class TenantBusyError(TenancyError):
    """``tenant remove`` was refused: samples of the tenant wait for budget or run, and would fail for good.

    Once the tenant is gone its skillbooks belong to another tenant, and a step sent as the removed
    one is refused (ForeignTenantError). ``waiting`` and ``running`` say how many samples.
    """

    def __init__(self, name: str, waiting: int, running: int) -> None:
        self.name = name
        self.waiting = waiting
        self.running = running
        super().__init__(
            f"tenant {name!r} has {counted(waiting, 'sample')} waiting for budget "
            f"and {running} running or queued: "
            "removed now, they would fail for good; nothing removed. Wait until they finish (--drain), "
            "or fail the waiting ones as dead letters that dead-letters retry sends as the skillbooks' "
            "owner then (--fail-waiting)"
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


class IntakeBodyError(AceError, ValueError):
    """An intake request's body or fields are not what intake reads; ``where`` names the line or field."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}; nothing was enqueued")


class IntakeBodyTooLargeError(AceError, ValueError):
    """An intake request's body is larger than ACE_INTAKE_MAX_BODY_BYTES; refused before it was read whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"request body is larger than {limit:,} bytes (ACE_INTAKE_MAX_BODY_BYTES): send smaller "
            "batches; nothing was enqueued"
        )


class FleetBusyError(AceError):
    """The admission window is full and more samples wait than ACE_INTAKE_MAX_BACKLOG: send again later."""

    def __init__(self, waiting: int, limit: int, retry_after: int) -> None:
        self.waiting = waiting
        self.limit = limit
        self.retry_after = retry_after
        super().__init__(
            f"the fleet is busy: its admission window is full and {waiting:,} samples wait, above "
            f"{limit:,} (ACE_INTAKE_MAX_BACKLOG); send again in {retry_after} s; nothing was enqueued"
        )
