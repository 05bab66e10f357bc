"""How each front end answers an error: one table from error class to exit code, HTTP status and MCP code.

An operation raises the project's own errors; the CLI, the console and MCP look the error up
here (:func:`outcome_of`, the most specific class first by the error's MRO) and answer with the
row's exit code, HTTP status or JSON-RPC code. An error no row names is a bug, never a refusal:
the CLI ends with its traceback's one line and exit 1, HTTP with 500, MCP with the back-end code
(a ``KeyError`` in a view is not a 404).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from ..distributed.ops.errors import EmbeddedRedisBusyError
from ..distributed.producer.errors import (
    IntakeBusyError,
    IntakeForbiddenError,
    IntakeRequestError,
    IntakeUnauthorizedError,
    IntakeUnavailableError,
    NoWorkersError,
)
from ..distributed.store.errors import (
    BackupFormatError,
    BackupSchemaError,
    BackupTargetError,
    BatchCancelledError,
    BatchInputMissingError,
    BatchNotFoundError,
    ChangelogTrimmedError,
    CorruptDataError,
    HeadMovedError,
    InvalidKeyPrefixError,
    InvalidLabelError,
    InvalidSelectorError,
    InvalidSkillbookNameError,
    LabelMovedError,
    MigrationRefusedError,
    ProposalConflictError,
    ProposalDecidedError,
    RestoreSkillbooksExistError,
    RestoreTargetNotEmptyError,
    SamplesInFlightError,
    SchemaMismatchError,
    SkillbookExistsError,
    SkillbookFullError,
    StaleHistoryError,
    UnknownLabelError,
    UnknownProposalError,
    UnknownSkillbookError,
    VersionConflict,
    VersionRangeError,
)
from ..distributed.tenancy.errors import (
    BudgetExhaustedError,
    ForeignSkillbookError,
    InvalidApiKeyError,
    InvalidTenantError,
    RoleTooLowError,
    TenantConflictError,
    TenantExistsError,
    UnknownTenantError,
)
from ..distributed.worker.errors import BrokerUnavailable, RedisUnavailable, WorkerConfigError
from ..errors import (
    InvalidConsolidationError,
    MissingFieldError,
    PinnedSkillError,
    SettingsError,
    SkillbookFormatError,
    SkillStateError,
    UnknownSkillError,
)
from .errors import (
    AdminRoleRequiredError,
    BatchNotResumableError,
    ExpectRequiredError,
    FleetAdminRequiredError,
    FleetBusyError,
    IntakeBodyError,
    IntakeBodyTooLargeError,
    TenantBusyError,
)

__all__ = ["Outcome", "OUTCOMES", "UNEXPECTED", "outcome_of"]


@dataclass(frozen=True)
class Outcome:
    """How a kind of error is answered: a stable ``kind`` a client branches on, the CLI's exit
    code (see cli/exit_codes.py), the HTTP status, and the JSON-RPC error code of MCP."""

    kind: str
    exit_code: int
    http_status: int
    mcp_code: int


# JSON-RPC: -32602 is "invalid params"; -32000..-32099 are the server's own.
INVALID = Outcome("invalid", 2, 400, -32602)
NOT_FOUND = Outcome("not_found", 2, 404, -32008)
UNAUTHENTICATED = Outcome("unauthenticated", 2, 401, -32007)
FORBIDDEN = Outcome("forbidden", 4, 403, -32007)
CONFLICT = Outcome("conflict", 4, 409, -32006)
REFUSED = Outcome("refused", 4, 422, -32006)
UNAVAILABLE = Outcome("unavailable", 3, 503, -32004)
FAILED = Outcome("failed", 1, 500, -32004)
TOO_LARGE = Outcome("too_large", 2, 413, -32602)
# Back-pressure: the fleet has enough to do; the same request later may pass (Retry-After says when).
BUSY = Outcome("busy", 4, 429, -32006)
# A bug: an error no row names.
UNEXPECTED = Outcome("internal", 1, 500, -32603)

# The one table. Order does not matter: the most specific class of an error's MRO decides.
OUTCOMES: dict[type[BaseException], Outcome] = {
    # The request is wrong: fixed by changing it.
    SettingsError: INVALID,
    InvalidSkillbookNameError: INVALID,
    InvalidKeyPrefixError: INVALID,
    InvalidLabelError: INVALID,
    InvalidTenantError: INVALID,
    VersionRangeError: INVALID,
    ChangelogTrimmedError: INVALID,
    StaleHistoryError: INVALID,
    SkillbookFormatError: INVALID,
    MissingFieldError: INVALID,
    SkillStateError: INVALID,
    SchemaMismatchError: INVALID,
    EmbeddedRedisBusyError: INVALID,  # ACE_EMBEDDED_REDIS_DIR names a folder another process runs
    ExpectRequiredError: INVALID,
    WorkerConfigError: INVALID,  # a worker refused its settings (write queue concurrency, pickle)
    BackupFormatError: INVALID,  # a backup folder's file is corrupt or truncated
    BackupSchemaError: INVALID,
    BackupTargetError: INVALID,
    IntakeBodyError: INVALID,
    InvalidSelectorError: INVALID,  # forget: a selector that names nothing it can match
    IntakeBodyTooLargeError: TOO_LARGE,
    IntakeRequestError: INVALID,  # what intake answered a producer (HttpProducer), as it answered it
    # What it names does not exist.
    UnknownSkillbookError: NOT_FOUND,
    UnknownSkillError: NOT_FOUND,
    UnknownLabelError: NOT_FOUND,
    UnknownProposalError: NOT_FOUND,
    UnknownTenantError: NOT_FOUND,
    BatchNotFoundError: NOT_FOUND,
    BatchInputMissingError: NOT_FOUND,
    # Who asks may not.
    InvalidApiKeyError: UNAUTHENTICATED,
    RoleTooLowError: FORBIDDEN,
    IntakeUnauthorizedError: UNAUTHENTICATED,
    IntakeForbiddenError: FORBIDDEN,
    # The console still answers 404 for another tenant's skillbook (it hides which exist, see
    # console/views.py); where the refusal names the owner anyway, it is a refusal by policy.
    ForeignSkillbookError: FORBIDDEN,
    FleetAdminRequiredError: FORBIDDEN,
    AdminRoleRequiredError: FORBIDDEN,
    # The state moved under the request, or does not allow it now: nothing was changed.
    VersionConflict: CONFLICT,
    HeadMovedError: CONFLICT,
    LabelMovedError: CONFLICT,
    ProposalDecidedError: CONFLICT,
    ProposalConflictError: CONFLICT,
    InvalidConsolidationError: CONFLICT,  # a proposal's consolidation names a skill gone since
    PinnedSkillError: CONFLICT,
    SkillbookExistsError: CONFLICT,
    TenantExistsError: CONFLICT,
    TenantConflictError: CONFLICT,
    BatchCancelledError: CONFLICT,
    BatchNotResumableError: CONFLICT,
    RestoreTargetNotEmptyError: CONFLICT,
    RestoreSkillbooksExistError: CONFLICT,
    # A gate said no.
    MigrationRefusedError: REFUSED,
    BudgetExhaustedError: REFUSED,
    SkillbookFullError: REFUSED,
    TenantBusyError: REFUSED,
    SamplesInFlightError: REFUSED,  # forget: matched samples still running after the wait
    FleetBusyError: BUSY,
    IntakeBusyError: BUSY,
    # The service, not the request, is at fault: retried later, it may pass.
    RedisUnavailable: UNAVAILABLE,
    BrokerUnavailable: UNAVAILABLE,
    NoWorkersError: UNAVAILABLE,
    IntakeUnavailableError: UNAVAILABLE,
    redis.ConnectionError: UNAVAILABLE,
    redis.TimeoutError: UNAVAILABLE,
    # Ran, and something failed: data that is not what it should be.
    CorruptDataError: FAILED,
}


def outcome_of(error: BaseException) -> Outcome:
    """The row of ``error``'s most specific class that the table names; UNEXPECTED for none."""
    for cls in type(error).__mro__:
        found = OUTCOMES.get(cls)
        if found is not None:
            return found
    return UNEXPECTED
