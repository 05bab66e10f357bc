"""The per-process cache of skillbook snapshots, shared between callers as read-only views."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping

from ...core.skillbook import Skillbook
from .changelog import SkillImage

__all__ = ["SnapshotCache", "advance_snapshot", "default_snapshot_cache"]


class SnapshotCache:
    """A small thread-safe LRU of read-only snapshots, keyed by skillbook identity and version.

    Keys are whatever the store passes (it uses prefix, name, incarnation and
    version, so a deleted and recreated skillbook never hits an old entry).
    Values are shared and never changed: the store hands them out only
    wrapped in a SkillbookView, which has no write methods.
    """

    def __init__(self, maxsize: int = 16, *, versions_per_skillbook: int = 2) -> None:
        """``versions_per_skillbook``: the newest versions of one skillbook kept (older ones go first).

        Readers holding an older snapshot keep it alive themselves; the cache needs only
        the newest, to bring forward, and the one before, for readers a version behind.
        A snapshot of 100,000 skills costs tens of MiB beyond the skills it shares.
        """
        if maxsize < 1 or versions_per_skillbook < 1:
            raise ValueError(
                "maxsize and versions_per_skillbook must be at least 1, "
                f"got {maxsize} and {versions_per_skillbook}"
            )
        self.maxsize = maxsize
        self.versions_per_skillbook = versions_per_skillbook
        # identity -> (version, key) of its cached versions, oldest first: the last is the newest.
        self._versions: dict[Hashable, list[tuple[int, Hashable]]] = {}
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Skillbook] = OrderedDict()
        self._filling: dict[Hashable, threading.Lock] = {}

    def filling(self, identity: Hashable) -> threading.Lock:
        """The lock one caller holds while it builds a missing snapshot of ``identity``.

        Threads that miss the same version at once then build it once, instead of
        each reading (or deriving) the whole skillbook side by side.
        """
        with self._lock:
            return self._filling.setdefault(identity, threading.Lock())

    def get(self, key: Hashable) -> Skillbook | None:
        """The snapshot cached under ``key``, marked as recently used, or None."""
        with self._lock:
            book = self._entries.get(key)
            if book is not None:
                self._entries.move_to_end(key)
            return book

    def put(self, key: Hashable, book: Skillbook, *, identity: Hashable = None, version: int = -1) -> None:
        """Cache ``book`` under ``key``, evicting the least recently used entry when full.

        With ``identity`` (which skillbook) and ``version``, :meth:`newest` can
        later find it as the starting point of an incremental refresh.
        """
        with self._lock:
            self._entries[key] = book
            self._entries.move_to_end(key)
            if identity is not None:
                self._keep_newest_versions(identity, version, key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def _keep_newest_versions(self, identity: Hashable, version: int, key: Hashable) -> None:
        versions = self._versions.setdefault(identity, [])
        if (version, key) not in versions:
            versions.append((version, key))
            versions.sort(key=lambda entry: entry[0])
        while len(versions) > self.versions_per_skillbook:
            _, old = versions.pop(0)
            self._entries.pop(old, None)

    def newest(self, identity: Hashable) -> tuple[int, Skillbook] | None:
        """The newest cached (version, snapshot) put for ``identity``, or None."""
        with self._lock:
            versions = self._versions.get(identity)
            if not versions:
                return None
            version, key = versions[-1]
            book = self._entries.get(key)
            if book is None:  # the least recently used went first
                del self._versions[identity]
                return None
            return version, book

    def clear(self) -> None:
        """Forget every snapshot."""
        with self._lock:
            self._entries.clear()
            self._versions.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def advance_snapshot(
    base: Skillbook,
    after_images: Iterable[Mapping[str, SkillImage]],
    *,
    next_id: int,
    new_order: Callable[[str], tuple[int, int, str]],
) -> Skillbook:
    """A snapshot: ``base`` with each version's after-images applied, oldest first.

    Costs the touched skills only (layered over ``base``'s, see Skillbook.with_changes),
    instead of decoding the whole skillbook again; new skills are ordered by
    ``new_order``, their insertion order in the store.
    """
    return base.with_changes(after_images, next_id=next_id, order_of_new=new_order)


_DEFAULT_CACHE = SnapshotCache()


def default_snapshot_cache() -> SnapshotCache:
    """The cache every store of this process shares unless given its own."""
    return _DEFAULT_CACHE
