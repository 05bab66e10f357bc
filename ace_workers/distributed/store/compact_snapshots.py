"""The persisted compact snapshot of one skillbook: what a fresh process starts from instead of a whole read.

A process with no cached snapshot used to read every skill (HGETALL, a JSON
decode and a Skill each) and then build the prompt index: over 30 s for
100,000 skills. The first reader that has to do that writes what it built as
one compact value (core/compact_snapshot.py); later fresh readers load it and
bring it forward through the change log like a cached snapshot. A reader that
brought a loaded one forward through many versions writes the newer one, so
the value stays within reach of the log. An older write never replaces a newer
one (WATCH, then compare versions).

The value is derived from the skills hash and the change log: backups leave it
out, and a value that is corrupt, of another incarnation or ahead of the
skillbook is ignored (with one warning line naming the key for a corrupt one).
"""

from __future__ import annotations

import logging

import redis

from ...core.compact_snapshot import pack_snapshot, unpack_snapshot
from ...core.skillbook import Skillbook
from ...errors import SkillbookFormatError
from .keys import SkillbookKeys

__all__ = ["CompactSnapshots"]

logger = logging.getLogger(__name__)

_VERSION, _INCARNATION, _DATA = "version", "incarnation", "data"


class CompactSnapshots:
    """Loads and saves one skillbook's persisted compact snapshot (its key in keys.py)."""

    def __init__(self, client: redis.Redis, keys: SkillbookKeys) -> None:
        self._redis = client
        self.key = keys.compact_snapshot

    def load(self, incarnation: str | None, version: int) -> tuple[int, Skillbook] | None:
        """The persisted snapshot of ``incarnation`` at ``version`` or before: (its version, book) or None."""
        if self._decodes_responses():
            return None
        raw = self._redis.hget(self.key, _DATA)
        if not isinstance(raw, bytes):
            return None
        try:
            header, book = unpack_snapshot(raw, source=f"key {self.key!r}")
        except SkillbookFormatError as exc:
            logger.warning("%s; ignored: the skillbook is read whole and the value written again", exc)
            self._redis.delete(self.key)  # else its version would keep the rebuilt one from replacing it
            return None
        if header.incarnation != incarnation or header.version > version:
            return None  # of a deleted and recreated skillbook, or of a version this read does not see yet
        return header.version, book

    def save(self, book: Skillbook, version: int, incarnation: str | None) -> Skillbook:
        """Persist ``book`` (``version`` of ``incarnation``) unless a newer one of it is there.

        Returns the snapshot in its compact form (skills kept encoded: a fraction of
        the memory), or ``book`` itself for a client that decodes replies as text.
        """
        if self._decodes_responses():
            return book
        data = pack_snapshot(book, version=version, incarnation=incarnation)
        self._write(data, version, incarnation)
        return unpack_snapshot(data, source=f"key {self.key!r}")[1]

    def _write(self, data: bytes, version: int, incarnation: str | None) -> None:
        with self._redis.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(self.key)  # type: ignore[no-untyped-call]
                stored_version, stored_incarnation = pipe.hmget(self.key, [_VERSION, _INCARNATION])
                if (
                    stored_version is not None
                    and _text(stored_incarnation) == (incarnation or "")
                    and _number(stored_version) >= version
                ):
                    return
                pipe.multi()
                pipe.delete(self.key)
                pipe.hset(self.key, mapping={_VERSION: version, _INCARNATION: incarnation or "", _DATA: data})
                pipe.execute()
            except redis.WatchError:
                pass  # another process wrote one meanwhile: as good, or newer

    def _decodes_responses(self) -> bool:
        """True for a client that decodes replies as text: the value is binary, so it is not used."""
        kwargs: dict[str, object] = getattr(self._redis, "get_connection_kwargs", dict)()
        return bool(kwargs.get("decode_responses"))


def _text(raw: bytes | str | None) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else (raw or "")


def _number(raw: bytes | str) -> int:
    try:
        return int(raw)
    except ValueError:
        return -1  # unreadable: overwritten
