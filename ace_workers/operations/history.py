"""Rollback: restore a skillbook's skills to an earlier version, as a new version (history is kept).

Needs role admin. ``expect`` (the head a person saw when confirming) refuses a rollback
whose head moved since (HeadMovedError): it never undoes versions nobody saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .access import ADMIN, existing_store
from .fleet import FleetClient
from .principal import Principal

__all__ = ["ROLLBACK_ROLE", "Rollback", "rollback"]

ROLLBACK_ROLE = ADMIN


@dataclass(frozen=True)
class Rollback:
    """What a rollback did: the version restored, the head before, and the head now (the same: a no-op)."""

    name: str
    restored_version: int
    head_before: int
    version: int

    @property
    def changed(self) -> bool:
        """False when ``restored_version`` was the head already."""
        return self.version != self.head_before


def rollback(
    fleet: FleetClient,
    principal: Principal,
    name: str,
    to_version: int,
    *,
    note: str = "",
    via: str = "",
    expect: int | None = None,
) -> Rollback:
    """Restore version ``to_version`` of ``name`` as a new version, if the head is still ``expect`` (given).

    The change log records the principal (``actor``), ``via`` (the front end) and ``note``.
    Raises VersionRangeError, ChangelogTrimmedError, HeadMovedError.
    """
    store = existing_store(fleet, principal, ROLLBACK_ROLE, name)
    head = store.version()
    source: dict[str, Any] = {"actor": principal.name}
    if via:
        source["via"] = via
    if note:
        source["note"] = note
    version = store.rollback(to_version, source=source, expect=expect)
    return Rollback(name, to_version, head, version)
