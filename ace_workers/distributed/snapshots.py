"""Read-only skillbook snapshots and the per-process cache that shares them between callers."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, NoReturn

from ..core.consolidation import ConsolidationBatch, ConsolidationOp, ConsolidationReport
from ..core.skill import SimilarityDecision, Skill
from ..core.skillbook import ApplyReport, Skillbook
from ..core.updates import UpdateBatch
from .changelog import SkillImage

__all__ = ["ReadOnlySkillbook", "SnapshotCache", "advance_snapshot", "default_snapshot_cache"]


class ReadOnlySkillbook(Skillbook):
    """A skillbook snapshot shared between callers: every write method raises TypeError.

    Reads work as on any Skillbook (and return copies). To change a snapshot,
    copy it first: ``Skillbook.from_dict(snapshot.to_dict())``.
    """

    def _refuse(self, what: str) -> NoReturn:
        raise TypeError(
            f"{what}: this skillbook is a cached read-only snapshot shared with other callers; "
            "copy it with Skillbook.from_dict(snapshot.to_dict()) or write through the store"
        )

    def add_skill(
        self,
        section: str,
        content: str,
        skill_id: str | None = None,
        *,
        justification: str = "",
        evidence: str = "",
        sources: list[dict[str, Any]] | None = None,
    ) -> Skill:
        """Refused: snapshots are read-only."""
        self._refuse("add_skill")

    def update_skill(
        self, skill_id: str, content: str, *, justification: str = "", evidence: str = ""
    ) -> Skill:
        """Refused: snapshots are read-only."""
        self._refuse("update_skill")

    def tag_skill(self, skill_id: str, tag: str, increment: int = 1) -> Skill:
        """Refused: snapshots are read-only."""
        self._refuse("tag_skill")

    def remove_skill(self, skill_id: str, *, soft: bool = False) -> None:
        """Refused: snapshots are read-only."""
        self._refuse("remove_skill")

    def apply_update(self, batch: UpdateBatch) -> ApplyReport:
        """Refused: snapshots are read-only."""
        self._refuse("apply_update")

    def set_similarity_decision(self, id_a: str, id_b: str, decision: SimilarityDecision) -> None:
        """Refused: snapshots are read-only."""
        self._refuse("set_similarity_decision")

    def apply_consolidation(
        self, operations: ConsolidationBatch | Iterable[ConsolidationOp]
    ) -> ConsolidationReport:
        """Refused: snapshots are read-only."""
        self._refuse("apply_consolidation")

    # set_embeddings stays allowed: an embedding is a cache of the skill's text (keyed by its
    # content hash), not a change to the skillbook, and every caller of the snapshot gains by it.


class SnapshotCache:
    """A small thread-safe LRU of read-only snapshots, keyed by skillbook identity and version.

    Keys are whatever the store passes (it uses prefix, name, incarnation and
    version, so a deleted and recreated skillbook never hits an old entry).
    Values are shared: callers must treat them as read-only, which
    ReadOnlySkillbook enforces.
    """

    def __init__(self, maxsize: int = 16) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.maxsize = maxsize
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Skillbook] = OrderedDict()
        # identity -> (version, key) of the newest snapshot put, while it is still cached.
        self._newest: dict[Hashable, tuple[int, Hashable]] = {}

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
            if identity is not None and version > self._newest.get(identity, (-1, None))[0]:
                self._newest[identity] = (version, key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def newest(self, identity: Hashable) -> tuple[int, Skillbook] | None:
        """The newest cached (version, snapshot) put for ``identity``, or None."""
        with self._lock:
            version, key = self._newest.get(identity, (-1, None))
            book = self._entries.get(key) if key is not None else None
            if book is None:
                self._newest.pop(identity, None)
                return None
            return version, book

    def clear(self) -> None:
        """Forget every snapshot."""
        with self._lock:
            self._entries.clear()
            self._newest.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def advance_snapshot(
    base: Skillbook,
    after_images: Iterable[Mapping[str, SkillImage]],
    *,
    next_id: int,
    new_order: Callable[[str], tuple[int, int, str]],
) -> ReadOnlySkillbook:
    """A read-only snapshot: ``base`` with each version's after-images applied, oldest first.

    Costs a shallow copy of the skill dict plus the touched skills, instead of
    decoding the whole skillbook again. Skills already present keep their place;
    new ones go last, ordered by ``new_order`` (their insertion order in the
    store), as the core appends them. ``next_id`` is the next id number to issue.
    """
    skills = dict(base._skills)
    added: list[str] = []
    for images in after_images:
        for skill_id, image in images.items():
            if image is None:
                skills.pop(skill_id, None)
            elif skill_id in skills:
                skills[skill_id] = Skill.from_dict(image)
            else:
                skills[skill_id] = Skill.from_dict(image)
                added.append(skill_id)
    for skill_id in sorted((i for i in added if i in skills), key=new_order):
        skills[skill_id] = skills.pop(skill_id)  # move to the end, in insertion order
    book = ReadOnlySkillbook()
    book._skills = skills
    book._next_id = next_id
    book._similarity = base._similarity  # applies never change similarity decisions
    return book


_DEFAULT_CACHE = SnapshotCache()


def default_snapshot_cache() -> SnapshotCache:
    """The cache every store of this process shares unless given its own."""
    return _DEFAULT_CACHE
