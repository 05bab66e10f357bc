"""The ADDs concurrent SkillManager decisions on one skillbook are about to make, in a Redis stream.

Learn slots decide side by side, each on the skillbook as it was when it started:
sixteen slots reflecting on one new lesson would add it sixteen times, worded
sixteen ways, before the single writer applies the first. So a decision that
adds announces its ADDs here, and in the same transaction reads the ADDs
announced before it. Stream ids order the announcements by the server's clock:
of two overlapping decisions exactly one is the later, and only it decides again.

An entry is in flight for ``window_seconds`` after it was announced (its ADD
is in the skillbook by then, where the lookup finds it); the key expires a
window after the last announcement. Entries hold a lesson's section and text
only, never its evidence. An entry that does not decode is passed over with one
warning naming the key and entry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import redis

from ...core.skill_lookup import Announcement, PendingOperation
from .keys import SkillbookKeys
from .replies import decode_text, execute_reads

__all__ = ["IN_FLIGHT_SECONDS", "RedisAdditionsInFlight"]

logger = logging.getLogger(__name__)

# Longer than a decision's ADDs take to reach the skillbook (a queue hop and one write), and short:
# an ADD in flight to a section a new decision adds to, sharing a word, costs it a second call.
IN_FLIGHT_SECONDS = 30
# The newest announcements read (and kept): more than the learn slots of a fleet.
IN_FLIGHT_READ = 256


class RedisAdditionsInFlight:
    """:class:`~ace_workers.core.skill_lookup.AdditionsInFlight` for one skillbook, on its Redis keys.

    ``redact`` (the skillbook's tenant's redactor, on a fleet) is applied to what is stored.
    """

    def __init__(
        self,
        client: redis.Redis,
        keys: SkillbookKeys,
        window_seconds: float = IN_FLIGHT_SECONDS,
        read_limit: int = IN_FLIGHT_READ,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self._redis = client
        self._redact = redact
        self.key = keys.additions_in_flight
        self.window_ms = int(window_seconds * 1000)
        self.read_limit = read_limit

    def announce(self, additions: Sequence[PendingOperation]) -> Announcement:
        """Append ``additions`` as one entry; the entries before it within the window, oldest first.

        One round trip: the append, the read and the expiry in one transaction.
        """
        redact = self._redact or str
        # Redacted like everything stored: a lesson may quote what its trace held.
        adds = [{"section": redact(op.section), "content": redact(op.content)} for op in additions]
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.xadd(self.key, {"adds": json.dumps(adds, ensure_ascii=False)}, maxlen=self.read_limit)
            pipe.xrevrange(self.key, "+", "-", count=self.read_limit)
            pipe.pexpire(self.key, self.window_ms)
            raw_id, newest_first, _ = execute_reads(pipe, [self.key] * 3)
        entry_id = decode_text(raw_id)
        since = _milliseconds(entry_id) - self.window_ms
        earlier: list[PendingOperation] = []
        for raw_entry_id, fields in reversed(newest_first):
            other = decode_text(raw_entry_id)
            if other != entry_id and _milliseconds(other) >= since:
                earlier += self._decoded(other, fields)
        return Announcement(entry_id=entry_id, earlier=earlier)

    def withdraw(self, announcement: Announcement) -> None:
        """Delete the announcement's entry: later decisions no longer see its ADDs."""
        self._redis.xdel(self.key, announcement.entry_id)

    def _decoded(self, entry_id: str, fields: Any) -> list[PendingOperation]:
        if isinstance(fields, list):  # a cluster pipeline's reply: [name, value, ...]
            fields = dict(zip(fields[::2], fields[1::2], strict=False))
        raw = fields.get(b"adds", fields.get("adds")) if isinstance(fields, dict) else None
        try:
            adds = json.loads(raw) if raw is not None else None
            if not isinstance(adds, list) or not all(_is_addition(add) for add in adds):
                raise ValueError("not a list of {section, content} objects")
        except ValueError as exc:  # JSONDecodeError among them
            logger.warning("%s entry %s: %s; passed over", self.key, entry_id, exc)
            return []
        return [
            PendingOperation(proposal_id=entry_id, type="ADD", section=add["section"], content=add["content"])
            for add in adds
        ]


def _is_addition(add: object) -> bool:
    return (
        isinstance(add, dict)
        and isinstance(add.get("section"), str)
        and isinstance(add.get("content"), str)
        and bool(add["content"].strip())
    )


def _milliseconds(entry_id: str) -> int:
    # A stream id is "<server milliseconds>-<sequence>".
    return int(entry_id.partition("-")[0])
