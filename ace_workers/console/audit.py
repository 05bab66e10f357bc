"""The console's audit log: one stream entry per action, who took it, on what, and how it ended.

Actions that change a skillbook also name their user in its change log (as the
actor ``user:NAME``); label moves are in the label log. This stream holds every
action, those and the rest (a dead-letter retry changes no skillbook), in one
place, kept ACE_RETENTION_AUDIT_DAYS: each write drops (approximately) what is older, and the
nightly retention sweep drops the rest exactly (distributed/store/retention.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from ..distributed.store.keys import console_audit_key
from ..distributed.store.replies import stream_newest_first

__all__ = ["AuditEntry", "record_action", "read_audit"]


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
    kept_days: float = 365.0,
) -> AuditEntry:
    """Append one entry to the audit stream and return it; entries older than ``kept_days`` (0: none)
    go, approximately (MINID ~: whole stream nodes only, so the write stays cheap)."""
    at = datetime.now(UTC)
    entry = AuditEntry(at.isoformat(), user, action, target, outcome, details or {})
    oldest = at - timedelta(days=kept_days)
    client.xadd(
        console_audit_key(prefix),
        {"entry": json.dumps(entry.to_dict(), default=str)},
        minid=f"{int(oldest.timestamp() * 1000)}-0" if kept_days else None,
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
