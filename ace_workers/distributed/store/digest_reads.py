"""The digests of a run of versions: stored ones where the writer kept them, the rest from the change log.

An entry touching many skills (an import of 100,000) has its digest stored beside
it (change_digest.py); decoding the entry itself would take seconds. Every other
entry is small, read from the log and digested here. A stored digest that does not
read back is passed over with one warning naming the key and field, and its entry
digested instead: the timeline is never wrong, only slower.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import redis

from .change_digest import ChangeDigest, digest_change, stored_digest_from_json
from .changelog import stream_id
from .keys import SkillbookKeys
from .replies import decode_int, execute_reads, reading
from .transactions import records_of

__all__ = ["STORED_KEPT", "read_change_digests"]

logger = logging.getLogger(__name__)

# Stored digests above which a reader drops those of versions trimmed from the log since.
STORED_KEPT = 64


def read_change_digests(
    client: redis.Redis, keys: SkillbookKeys, from_version: int, to_version: int
) -> list[ChangeDigest]:
    """The digests of the versions the log holds from ``from_version`` + 1 to ``to_version``, oldest first."""
    versions = list(range(from_version + 1, to_version + 1))
    if not versions:
        return []
    with client.pipeline(transaction=True) as pipe:
        pipe.get(keys.version)
        pipe.xlen(keys.changes)
        pipe.hmget(keys.change_digests, [str(version) for version in versions])
        pipe.hlen(keys.change_digests)
        raw_version, length, raw_digests, kept = execute_reads(
            pipe, [keys.version, keys.changes, keys.change_digests, keys.change_digests]
        )
    oldest = decode_int(raw_version, keys.version) - decode_int(length, keys.changes) + 1
    digests: dict[int, ChangeDigest] = {}
    for version, raw in zip(versions, raw_digests, strict=True):
        if raw is not None and version >= oldest:
            try:
                digests[version] = stored_digest_from_json(raw, version)
            except ValueError as exc:
                logger.warning(
                    "%s field %s: %s; digesting the change-log entry instead",
                    keys.change_digests,
                    version,
                    exc,
                )
    missing = [version for version in versions if version >= oldest and version not in digests]
    for first, last in _runs(missing):
        digests.update((digest.version, digest) for digest in _digest_entries(client, keys, first, last))
    if int(kept or 0) > STORED_KEPT:
        _drop_trimmed(client, keys, oldest)
    return [digests[version] for version in sorted(digests)]


def _runs(versions: list[int]) -> Iterator[tuple[int, int]]:
    """(first, last) of each run of consecutive versions in ascending ``versions``."""
    start = 0
    for at in range(1, len(versions) + 1):
        if at == len(versions) or versions[at] != versions[at - 1] + 1:
            yield versions[start], versions[at - 1]
            start = at


def _digest_entries(client: redis.Redis, keys: SkillbookKeys, first: int, last: int) -> list[ChangeDigest]:
    """The digests of the log's entries of versions ``first`` to ``last``, each decoded and let go in turn."""
    with reading(keys.changes):
        entries = list(client.xrange(keys.changes, min=stream_id(first), max=stream_id(last)) or [])
    entries.reverse()  # popped oldest first: each raw entry is let go once digested
    digests: list[ChangeDigest] = []
    while entries:
        digests.extend(digest_change(record) for record in records_of([entries.pop()], keys.changes))
    return digests


def _drop_trimmed(client: redis.Redis, keys: SkillbookKeys, oldest: int) -> None:
    """Forget the stored digests of versions the log no longer holds (and fields that name no version)."""
    with reading(keys.change_digests):
        fields = [
            field.decode() if isinstance(field, bytes) else str(field)
            for field in client.hkeys(keys.change_digests)
        ]
    stale = [field for field in fields if not field.isdigit() or int(field) < oldest]
    if stale:
        client.hdel(keys.change_digests, *stale)
