"""Retention: what the fleet keeps of each kind of record, for how long, and the sweep on demand.

The bounds are settings (one per kind); the store's sweep (distributed/store/retention.py)
trims what is past them. Both commands are the fleet's business: a fleet-wide admin's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from ..distributed.settings import WorkerSettings, env_name
from ..distributed.store.retention import sweep
from .access import require_fleet_admin
from .fleet import FleetClient
from .principal import Principal

__all__ = ["RetentionRow", "retention_rows", "shown_number", "show_retention", "sweep_retention"]

# Beat's ``retention`` entry, on ACE_NIGHTLY_SCHEDULE; ``ace-workers retention sweep`` runs it by hand.
_SWEEP = "nightly sweep"


@dataclass(frozen=True)
class RetentionRow:
    """One kind of record: its setting, the setting's value, what that keeps, and what enforces it."""

    kind: str  # as the sweep counts it
    setting: str
    value: float
    kept: str
    enforced_by: str

    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON object."""
        return asdict(self)


def shown_number(value: float) -> str:
    """A setting's value as a person wrote it: 1000000 whole (``:g`` would say 1e+06), 0.5 as it is."""
    return str(int(value)) if float(value).is_integer() else str(value)


def retention_rows(settings: WorkerSettings) -> list[RetentionRow]:
    """Every kind of record with a bound, in the order ``retention show`` lists them."""

    def days(value: float, after: str) -> str:
        return f"{shown_number(value)} days {after}" if value else "forever"

    def newest(value: int, what: str) -> str:
        return f"the newest {value} {what} per skillbook" if value else "all"

    ttl = settings.result_ttl_seconds
    return [
        RetentionRow(
            "batch_records",
            env_name("result_ttl_seconds"),
            ttl,
            f"{ttl} s after its batch finished; a running batch's until it finishes",
            "Redis expiry, set when the batch finishes",
        ),
        RetentionRow(
            "dead_letters",
            env_name("retention_dead_letter_days"),
            settings.retention_dead_letter_days,
            days(settings.retention_dead_letter_days, "after it was parked (an undated one: kept)"),
            _SWEEP,
        ),
        RetentionRow(
            "decided_proposals",
            env_name("retention_proposal_days"),
            settings.retention_proposal_days,
            days(settings.retention_proposal_days, "after the decision; pending ones until decided"),
            _SWEEP,
        ),
        RetentionRow(
            "audit",
            env_name("retention_audit_days"),
            settings.retention_audit_days,
            days(settings.retention_audit_days, "after the console action"),
            f"each console action (approximately), {_SWEEP}",
        ),
        RetentionRow(
            "label_log",
            env_name("retention_label_moves"),
            settings.retention_label_moves,
            newest(settings.retention_label_moves, "label moves"),
            f"each label move (approximately), {_SWEEP}",
        ),
        RetentionRow(
            "evaluations",
            env_name("retention_evaluations"),
            settings.retention_evaluations,
            newest(settings.retention_evaluations, "evaluation reports"),
            f"each evaluation, {_SWEEP}",
        ),
        RetentionRow(
            "erasures",
            env_name("retention_erasure_days"),
            settings.retention_erasure_days,
            days(settings.retention_erasure_days, "after the erasure (`forget`)"),
            _SWEEP,
        ),
    ]


def show_retention(fleet: FleetClient, principal: Principal) -> list[RetentionRow]:
    """What is kept of each kind of record, and for how long (a fleet-wide admin's to read)."""
    require_fleet_admin(principal, "read the retention settings")
    return retention_rows(fleet.settings)


def sweep_retention(
    fleet: FleetClient, principal: Principal, *, dry_run: bool = False, now: datetime | None = None
) -> dict[str, int]:
    """Trim every kind past its bound now; how many records of each went (would go, ``dry_run``)."""
    require_fleet_admin(principal, "sweep records past their retention")
    policy = fleet.settings.retention_policy()
    return sweep(fleet.redis, fleet.prefix, policy, now or datetime.now(UTC), dry_run=dry_run)
