"""The console's audit log: one stream entry per action, who took it, on what, and how it ended.

Actions that change a skillbook also name their user in its change log (as the
actor ``user:NAME``); label moves are in the label log. This stream holds every
action, those and the rest (a dead-letter retry changes no skillbook), in one
place, capped at ``AUDIT_MAXLEN`` entries.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import redis

from ..core.skill import utc_now
from ..distributed.store.keys import console_audit_key
from ..distributed.store.replies import stream_newest_first

__all__ = ["AUDIT_MAXLEN", "AuditEntry", "record_action", "read_audit"]

AUDIT_MAXLEN = 10_000


@dataclass(frozen=True)
class AuditEntry:
    """One console action: when, by whom, what, on which target, and its outcome ("ok" or the error)."""

    at: str
    user: str
    action: str
    target: str
    outcome: str
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def record_action(
    client: redis.Redis,
    prefix: str,
    *,
    user: str,
    action: str,
    target: str,
    outcome: str,
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Append one entry to the audit stream (approximately capped) and return it."""
    entry = AuditEntry(utc_now(), user, action, target, outcome, details or {})
    client.xadd(
        console_audit_key(prefix),
        {"entry": json.dumps(entry.to_dict(), default=str)},
        maxlen=AUDIT_MAXLEN,
        approximate=True,
    )
    return entry


def read_audit(client: redis.Redis, prefix: str, limit: int = 100) -> list[AuditEntry]:
    """The newest ``limit`` entries, newest first; an entry that does not parse is shown as such."""
    found: list[AuditEntry] = []
    for entry_id, fields in stream_newest_first(client, console_audit_key(prefix), page=min(limit, 500)):
        found.append(_parse(entry_id, fields))
        if len(found) >= limit:
            break
    return found


def _parse(entry_id: Any, fields: dict[Any, Any]) -> AuditEntry:
    raw = fields.get(b"entry", fields.get("entry"))
    try:
        data = json.loads(raw)  # type: ignore[arg-type]  # None or not JSON: caught below
        return AuditEntry(
            str(data["at"]),
            str(data["user"]),
            str(data["action"]),
            str(data["target"]),
            str(data["outcome"]),
            dict(data.get("details") or {}),
        )
    except (TypeError, ValueError, KeyError):
        # Redis contents are untrusted: show the damage rather than fail the page.
        return AuditEntry("", "", "unreadable entry", str(entry_id), "unreadable", {})
