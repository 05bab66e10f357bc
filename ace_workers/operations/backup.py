"""Backup and restore of the fleet's state: the fleet admin's, since a backup holds every tenant's data."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..distributed.store.backup import FLEET_FILE, Backup, load_backup, restore_backup, write_backup
from ..distributed.store.errors import BackupFormatError
from ..distributed.store.keys import tenants_key
from ..distributed.tenancy.tenants import Tenant
from .access import require_fleet_admin
from .fleet import FleetClient
from .principal import Principal

__all__ = ["RestoreReport", "backup_fleet", "restore_fleet"]


def _silent(line: str) -> None:
    """Progress nobody reads."""


@dataclass(frozen=True)
class RestoreReport:
    """What a restore wrote: the skillbooks, where, and the backup's manifest."""

    skillbooks: list[str]
    prefix: str
    where: str
    manifest: dict[str, Any]


def backup_fleet(
    fleet: FleetClient, principal: Principal, out: Path, *, say: Callable[[str], None] = _silent
) -> dict[str, Any]:
    """Write a backup of the fleet's state into the new folder ``out``; its manifest.

    ``say`` gets one progress line per skillbook. Raises BackupTargetError if ``out`` is not empty.
    """
    require_fleet_admin(principal, "back up the fleet")
    return write_backup(fleet.redis, fleet.prefix, out, say)


def restore_fleet(
    fleet: FleetClient,
    principal: Principal,
    source: Path,
    *,
    merge: bool = False,
    say: Callable[[str], None] = _silent,
) -> RestoreReport:
    """Load the backup in ``source`` into the fleet's Redis under its prefix.

    The whole backup is read and checked first: a bad file (BackupFormatError) writes nothing.
    Refuses a target holding data unless ``merge`` (RestoreTargetNotEmptyError), and with it a
    skillbook the target has (RestoreSkillbooksExistError) or a tenant claiming what a tenant of
    the target owns (TenantConflictError).
    """
    require_fleet_admin(principal, "restore a backup")
    backup = load_backup(source)
    if merge:
        _check_merged_tenants(fleet, backup)
    names = restore_backup(fleet.redis, fleet.prefix, backup, merge=merge, where=fleet.where, say=say)
    return RestoreReport(names, fleet.prefix, fleet.where, backup.manifest)


def _check_merged_tenants(fleet: FleetClient, backup: Backup) -> None:
    """TenantConflictError if a tenant the merge would add claims a skillbook or prefix a tenant of
    the target owns (a tenant of the same name the target has stays as it is, so it is not checked).

    BackupFormatError for a tenant record that is not a tenant.
    """
    tenants = tenants_key(fleet.prefix)[len(fleet.prefix) + 1 :]
    current = fleet.tenant_map()
    for key, _type, _ttl, fields in backup.fleet:
        if key != tenants:
            continue
        for field, raw in fields:
            name = field.decode(errors="replace")
            if name in current.tenants:
                continue
            try:
                tenant = Tenant.from_dict(json.loads(raw))
            except (ValueError, TypeError) as exc:  # not JSON, not a tenant (InvalidTenantError)
                raise BackupFormatError(
                    str(backup.path / FLEET_FILE), None, f"tenant {name!r}: {exc}"
                ) from None
            current.conflicts(tenant)
