"""Change-log digests kept per version: what the history timeline and the growth curves read.

A change-log entry never changes once written, so (skillbook incarnation,
version) names its digest (store/change_digest.py: counts, the first skills and
operations, growth) for good. Each is made once per process, the first time a
page shows its version, and kept in a small LRU bounded by the bytes the digests
hold. A page then reads only the log's extent (version, incarnation and length,
in one MULTI): a version importing 100,000 skills is read and decoded once, not
on every page that lists it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from ...distributed.store.change_digest import ChangeDigest
from ...distributed.store.replies import STREAM_PAGE
from ...distributed.store.store import RedisSkillbookStore

__all__ = ["DEFAULT_BUDGET", "ChangeDigestCache", "DigestPage", "recent_digests"]

DEFAULT_BUDGET = 16 * 1024 * 1024  # bytes of digests kept (roughly): some 8,000 versions of small changes
_ATTEMPTS = 3  # reads of versions missing from the cache, if the skillbook is recreated meanwhile


@dataclass(frozen=True)
class DigestPage:
    """The digests of some versions, newest first, and the head and incarnation they were read at."""

    head: int
    incarnation: str | None
    digests: list[ChangeDigest]


class ChangeDigestCache:
    """A thread-safe LRU of change digests keyed by (prefix, skillbook, incarnation, version)."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        if budget < 1:
            raise ValueError(f"budget must be at least 1, got {budget}")
        self.budget = budget
        self.weight = 0
        self.made = 0  # digests made from the change log (for tests and benchmarks)
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, ChangeDigest] = OrderedDict()
        self._filling: dict[Hashable, threading.Lock] = {}

    def recent(self, store: RedisSkillbookStore, limit: int, *, before: int | None = None) -> DigestPage:
        """The digests of the versions store.history(limit, before=before) returns, newest first.

        The versions below ``before`` (none: from the head), at most ``limit``;
        the ones the change log no longer holds are left out, as history() does.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        for _ in range(_ATTEMPTS):
            head, incarnation, oldest = store.changelog_extent()
            newest = head if before is None else min(head, before - 1)
            versions = range(newest, max(oldest, newest - limit + 1, 1) - 1, -1)
            identity = (store.keys.prefix, store.name, incarnation)
            found = self._found(identity, versions)
            missing = [version for version in versions if version not in found]
            if missing:
                with self._lock:
                    filling = self._filling.setdefault(identity, threading.Lock())
                with filling:  # pages missing the same versions at once read them once
                    found.update(self._found(identity, missing))
                    made = _read(store, [version for version in missing if version not in found])
                    if store.changelog_extent()[1] != incarnation:
                        continue  # deleted and created again meanwhile: these are another's
                    for digest in made:
                        self._put((*identity, digest.version), digest)
                    found.update((digest.version, digest) for digest in made)
                    self.made += len(made)
            return DigestPage(head, incarnation, [found[v] for v in versions if v in found])
        raise RuntimeError(f"skillbook {store.name!r} was deleted and created again {_ATTEMPTS} times")

    def _found(
        self, identity: tuple[str, str, str | None], versions: range | list[int]
    ) -> dict[int, ChangeDigest]:
        with self._lock:
            found = {}
            for version in versions:
                digest = self._entries.get((*identity, version))
                if digest is not None:
                    self._entries.move_to_end((*identity, version))
                    found[version] = digest
            return found

    def _put(self, key: Hashable, digest: ChangeDigest) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = digest
            self.weight += digest.weight
            while self.weight > self.budget and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self.weight -= dropped.weight

    def clear(self) -> None:
        """Forget every digest."""
        with self._lock:
            self._entries.clear()
            self.weight = 0


def _read(store: RedisSkillbookStore, versions: list[int]) -> list[ChangeDigest]:
    """The digests of ``versions`` (newest first) from the change log: one XRANGE per run of STREAM_PAGE."""
    made: list[ChangeDigest] = []
    start = 0
    while start < len(versions):
        end = start + 1  # a run of consecutive versions, newest first, at most STREAM_PAGE long
        while end < len(versions) and end - start < STREAM_PAGE and versions[end] == versions[end - 1] - 1:
            end += 1
        made.extend(store.change_digests(versions[end - 1] - 1, versions[start]))
        start = end
    return made


DEFAULT_CACHE = ChangeDigestCache()


def recent_digests(store: RedisSkillbookStore, limit: int, *, before: int | None = None) -> DigestPage:
    """ChangeDigestCache.recent() of the process's cache."""
    return DEFAULT_CACHE.recent(store, limit, before=before)
