"""Rollback: restore a skillbook's skills to an earlier version, as a new version (history is kept).

Needs role admin and ``expect``, the head its caller saw when confirming (see expect.py): a
rollback whose head moved since is refused (HeadMovedError), so it never undoes versions nobody saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .access import ADMIN, READ, existing_store
from .errors import ExpectRequiredError
from .expect import NOT_GIVEN, required_expect
from .fleet import FleetClient
from .principal import Principal

__all__ = ["NOT_GIVEN", "ROLLBACK_ROLE", "Rollback", "head_version", "rollback"]

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
    expect: int | None = NOT_GIVEN,
) -> Rollback:
    """Restore version ``to_version`` of ``name`` as a new version, if the head is still ``expect``.

    The change log records the principal (``actor``), ``via`` (the front end) and ``note``.
    Raises ExpectRequiredError (no ``expect``, or None: a head is a version), VersionRangeError,
    ChangelogTrimmedError, HeadMovedError.
    """
    store = existing_store(fleet, principal, ROLLBACK_ROLE, name)
    what = f"rolling back skillbook {name!r}"
    seen = required_expect(expect, what)
    if not isinstance(seen, int) or isinstance(seen, bool):
        raise ExpectRequiredError(what)  # None would skip the store's check
    head = store.version()
    source: dict[str, Any] = {"actor": principal.name}
    if via:
        source["via"] = via
    if note:
        source["note"] = note
    version = store.rollback(to_version, source=source, expect=seen)
    return Rollback(name, to_version, head, version)


def head_version(fleet: FleetClient, principal: Principal, name: str) -> int:
    """The version at the head of ``name`` now: what a caller with no view of its own expects."""
    return existing_store(fleet, principal, READ, name).version()
