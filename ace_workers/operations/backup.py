"""Backup and restore of the fleet's state: the fleet admin's, since a backup holds every tenant's data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..distributed.store.backup import load_backup, restore_backup, write_backup
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
    skillbook the target has (RestoreSkillbooksExistError).
    """
    require_fleet_admin(principal, "restore a backup")
    backup = load_backup(source)
    names = restore_backup(fleet.redis, fleet.prefix, backup, merge=merge, where=fleet.where, say=say)
    return RestoreReport(names, fleet.prefix, fleet.where, backup.manifest)
