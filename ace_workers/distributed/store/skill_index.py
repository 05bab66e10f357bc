"""The skill index of one skillbook version: its skills grouped by section, counted, searchable.

A read model of the change log: nothing here writes. The console's skillbook page
renders it (console/areas/skillbooks/); anything else that lists a skillbook's
skills a page at a time can read it the same way.

Kept per (skillbook incarnation, version) in a small per-process LRU. The first
one is built from the store's cached snapshot, reading only the fields a listing
shows, as columns (``skill_columns``: no copy of a skill, no object per skill).
A newer version is brought forward from it through the change log, as the store
brings its snapshot forward: the changed skills are rewritten or appended, the
rest shared, so a skillbook that learns all the time costs its changes, not its
size. A page of a 100,000-skill skillbook is then a slice of a list, and a search
one str.find per match over the listing's texts joined once; nothing is sorted per
request.

The order is Skillbook.skills()'s: sections by their first skill, skills in
insertion order. Each listing (active, archived, invalid, all) keeps a run of
positions per section, ascending, which makes that order canonical: a skill
that changes status or section leaves one run and joins another by bisection.
"""

from __future__ import annotations

import gc
import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ...core.skill import SKILL_STATUSES, Skill
from .changelog import ChangeRecord
from .errors import ChangelogTrimmedError
from .planning import skill_order_key
from .store import RedisSkillbookStore, advances_in_place

__all__ = [
    "ALL",
    "FIELDS",
    "MAX_ADVANCE",
    "Listing",
    "STATUS_FILTERS",
    "SkillIndex",
    "SkillIndexCache",
    "SkillMatches",
    "skill_index",
]

ALL = "all"
STATUS_FILTERS = (*SKILL_STATUSES, ALL)
# What a listing shows of a skill (the skill page shows the rest).
FIELDS = ("id", "section", "content", "helpful", "harmful", "neutral", "pinned", "status")
MAX_ADVANCE = 256  # versions an index is brought forward through; further behind, it is built anew


def _search_text(skill_id: str, content: str) -> str:
    return f"{skill_id}\n{content}".lower()


# The status left in the columns at the place of a skill deleted since the index was built: none lists it.
_DELETED = "(deleted)"
# Between the search texts a search runs through at once: a needle holding it is matched text by text.
_SEPARATOR = "\0"
# A section's skills in one listing: their positions (ascending) and search texts, side by side.
Run = tuple[list[int], list[str]]


@dataclass(frozen=True)
class Listing:
    """The skills of one status filter: runs by section, and the same flattened for paging and search.

    ``spans[section]`` is the [start, end) of the section's run in ``positions`` and ``texts``.
    Never changed once built: a newer index copies the runs it changes.
    """

    runs: dict[str, Run]
    positions: list[int]
    texts: list[str]
    spans: dict[str, tuple[int, int]]

    @classmethod
    def of_runs(cls, runs: dict[str, Run]) -> Listing:
        """The listing of ``runs``, sections ordered by their first skill (empty runs dropped)."""
        ordered = sorted(
            ((name, run) for name, run in runs.items() if run[0]), key=lambda item: item[1][0][0]
        )
        positions: list[int] = []
        texts: list[str] = []
        spans: dict[str, tuple[int, int]] = {}
        for name, (run_positions, run_texts) in ordered:
            spans[name] = (len(positions), len(positions) + len(run_positions))
            positions.extend(run_positions)
            texts.extend(run_texts)
        return cls(dict(ordered), positions, texts, spans)

    @cached_property
    def _joined(self) -> tuple[str, list[int]]:
        """The search texts as one string, and where each starts in it (made by the first search)."""
        starts, at = [], 0
        for text in self.texts:
            starts.append(at)
            at += len(text) + 1
        return _SEPARATOR.join(self.texts), starts

    def places_holding(self, needle: str) -> list[int]:
        """The places (ascending) whose search text holds ``needle``.

        One str.find per match over the joined texts: a test per text in Python took
        100 ms of every search of 100,000 skills. A match cannot cross into the next
        text, as the needle does not hold the separator between them.
        """
        if _SEPARATOR in needle:
            return [place for place, text in enumerate(self.texts) if needle in text]
        joined, starts = self._joined
        places: list[int] = []
        at = joined.find(needle)
        while at >= 0:
            place = bisect_right(starts, at) - 1
            places.append(place)
            if place + 1 == len(starts):
                break
            at = joined.find(needle, starts[place + 1])
        return places


@dataclass(frozen=True)
class SkillMatches:
    """The skills a filter matches: how many, which (places in the listing), how many per section."""

    index: SkillIndex
    listing: Listing
    places: range | list[int]
    sections: list[tuple[str, int]]  # every section with a match, and how many, in skillbook order

    @property
    def total(self) -> int:
        return len(self.places)

    def page(self, number: int, per_page: int) -> list[dict[str, Any]]:
        """The skills of page ``number`` (from 1), each as a dict of FIELDS."""
        start = (number - 1) * per_page
        positions = self.listing.positions
        return [self.index.skill(positions[place]) for place in self.places[start : start + per_page]]


class SkillIndex:
    """The skills of one skillbook version, by status filter (active, archived, invalid, all).

    ``columns`` hold FIELDS in insertion order; ``where`` maps a skill id to its position.
    ``incarnation``: which life of the skillbook the version is of (see cached_snapshot_of_incarnation).
    """

    def __init__(
        self,
        version: int,
        columns: dict[str, list[Any]],
        where: dict[str, int],
        texts: list[str],
        listings: dict[str, Listing],
        *,
        incarnation: str | None = None,
    ) -> None:
        self.version = version
        self.incarnation = incarnation
        self.columns = columns
        self.where = where
        self.texts = texts
        self.listings = listings
        # A status the core does not know (Redis is untrusted) is counted under "all" only.
        self.counts = {status: len(listings[status].positions) for status in STATUS_FILTERS}

    @classmethod
    def build(
        cls, version: int, columns: dict[str, list[Any]], *, incarnation: str | None = None
    ) -> SkillIndex:
        """The index of a snapshot's ``columns`` (FIELDS, in insertion order)."""
        ids, sections, statuses = columns["id"], columns["section"], columns["status"]
        texts = [
            _search_text(skill_id, content) for skill_id, content in zip(ids, columns["content"], strict=True)
        ]
        runs: dict[str, dict[str, Run]] = {status: {} for status in STATUS_FILTERS}
        for position, (section, status, text) in enumerate(zip(sections, statuses, texts, strict=True)):
            for name in (ALL, status) if status in SKILL_STATUSES else (ALL,):
                run = runs[name].get(section)
                if run is None:
                    run = runs[name][section] = ([], [])
                run[0].append(position)
                run[1].append(text)
        listings = {name: Listing.of_runs(by_section) for name, by_section in runs.items()}
        where = {skill_id: i for i, skill_id in enumerate(ids)}
        return cls(version, columns, where, texts, listings, incarnation=incarnation)

    def advanced(self, version: int, records: Sequence[ChangeRecord]) -> SkillIndex | None:
        """This index brought forward through ``records`` (the versions after it, up to ``version``).

        None when a record may move skills or change more than them (see advances_in_place):
        build that version anew.
        """
        latest: dict[str, Mapping[str, Any] | None] = {}
        made: dict[str, tuple[int, int, str]] = {}  # new skills: the version that made them, their id order
        for record in records:
            if not advances_in_place(record):
                return None
            for skill_id, image in record.after.items():
                latest[skill_id] = image  # None: deleted (a REMOVE)
                if skill_id not in self.where and skill_id not in made:
                    made[skill_id] = (record.version, *skill_order_key(skill_id))
        if not latest:
            return SkillIndex(
                version, self.columns, self.where, self.texts, self.listings, incarnation=self.incarnation
            )
        # New skills go last in the order the store gives them (version, then id number): the snapshot's.
        ordered = sorted(latest, key=lambda skill_id: made.get(skill_id, (0, 0, "")))
        latest = {skill_id: latest[skill_id] for skill_id in ordered}
        return _Advance(self).run(version, latest)

    @cached_property
    def active_chars(self) -> int:
        """The characters of the active skills' contents (what a prompt may show), once per version."""
        contents = self.columns["content"]
        return sum(len(contents[position]) for position in self.listings["active"].positions)

    def skill(self, position: int) -> dict[str, Any]:
        """The FIELDS of the skill at ``position`` (insertion order)."""
        return {name: self.columns[name][position] for name in FIELDS}

    def find(self, status: str, *, q: str = "", section: str = "") -> SkillMatches:
        """The skills of ``status`` whose id or content holds ``q`` (any case), in ``section`` if given.

        The section counts are of the status and ``q``, not the section: they say where else to look.
        """
        listing = self.listings[status]
        if not q:
            sections = [(name, end - start) for name, (start, end) in listing.spans.items()]
            start, end = listing.spans.get(section, (0, 0)) if section else (0, len(listing.positions))
            return SkillMatches(self, listing, range(start, end), sections)
        needle = q.lower()
        matched = listing.places_holding(needle)
        counts: dict[str, int] = {}
        section_of = self.columns["section"]
        for place in matched:
            name = section_of[listing.positions[place]]
            counts[name] = counts.get(name, 0) + 1
        if section:
            start, end = listing.spans.get(section, (0, 0))
            matched = matched[bisect_left(matched, start) : bisect_left(matched, end)]
        return SkillMatches(self, listing, matched, list(counts.items()))


class _Advance:
    """One bringing forward of an index: copies what it changes (the old index stays as it was)."""

    def __init__(self, base: SkillIndex) -> None:
        self.base = base
        self.columns = {name: column.copy() for name, column in base.columns.items()}
        self.texts = base.texts.copy()
        self.where = base.where
        self.runs: dict[str, dict[str, Run]] = {}  # per listing changed: its runs, changed ones copied
        self.copied: set[tuple[str, str]] = set()

    def run(self, version: int, images: Mapping[str, Mapping[str, Any] | None]) -> SkillIndex:
        """The index at ``version``: each skill's last image since the base (None: deleted), new ones last."""
        if any((skill_id in self.where) == (image is None) for skill_id, image in images.items()):
            self.where = dict(self.where)  # a skill made or deleted
        for skill_id, image in images.items():
            position = self.where.get(skill_id)
            if image is None:
                if position is not None:
                    self._delete(skill_id, position)
            elif position is None:
                self._add(skill_id, Skill.from_dict(dict(image)))
            else:
                self._rewrite(position, Skill.from_dict(dict(image)))
        listings = dict(self.base.listings)
        for name, runs in self.runs.items():
            listings[name] = Listing.of_runs(runs)
        return SkillIndex(
            version, self.columns, self.where, self.texts, listings, incarnation=self.base.incarnation
        )

    def _add(self, skill_id: str, skill: Skill) -> None:
        position = self.where[skill_id] = len(self.texts)
        for name, column in self.columns.items():
            column.append(getattr(skill, name))
        self.texts.append(_search_text(skill.id, skill.content))
        self._join(position, skill.section, skill.status)

    def _rewrite(self, position: int, skill: Skill) -> None:
        old_section, old_status = self.columns["section"][position], self.columns["status"][position]
        for name, column in self.columns.items():
            column[position] = getattr(skill, name)
        self.texts[position] = _search_text(skill.id, skill.content)
        if (old_section, old_status) != (skill.section, skill.status):
            self._leave(position, old_section, old_status)
            self._join(position, skill.section, skill.status)
        elif self.texts[position] != self.base.texts[position]:
            self._retext(position, skill.section, skill.status)

    def _delete(self, skill_id: str, position: int) -> None:
        """Take a deleted skill out of every listing; its place in the columns stays, unlisted.

        Positions only grow, so the others keep theirs (a build would close the gap,
        which changes positions, not the order). Its id is forgotten: ids are never reused.
        """
        self._leave(position, self.columns["section"][position], self.columns["status"][position])
        self.columns["status"][position] = _DELETED
        del self.where[skill_id]

    def _listings_of(self, status: str) -> tuple[str, ...]:
        return (ALL, status) if status in SKILL_STATUSES else (ALL,)

    def _run(self, listing: str, section: str) -> Run:
        """The run of ``section`` in ``listing``, copied on first change (created when missing)."""
        runs = self.runs.get(listing)
        if runs is None:
            runs = self.runs[listing] = dict(self.base.listings[listing].runs)
        if (listing, section) not in self.copied:
            self.copied.add((listing, section))
            positions, texts = runs.get(section, ([], []))
            runs[section] = (positions.copy(), texts.copy())
        return runs[section]

    def _join(self, position: int, section: str, status: str) -> None:
        for listing in self._listings_of(status):
            positions, texts = self._run(listing, section)
            at = bisect_left(positions, position)
            positions.insert(at, position)
            texts.insert(at, self.texts[position])

    def _leave(self, position: int, section: str, status: str) -> None:
        for listing in self._listings_of(status):
            positions, texts = self._run(listing, section)
            at = bisect_left(positions, position)
            del positions[at], texts[at]

    def _retext(self, position: int, section: str, status: str) -> None:
        for listing in self._listings_of(status):
            positions, texts = self._run(listing, section)
            texts[bisect_left(positions, position)] = self.texts[position]


class SkillIndexCache:
    """A small thread-safe LRU of skill indexes: the newest version of each skillbook incarnation.

    An index of 100,000 skills holds some tens of MiB (the search texts and the
    position lists; the values are the snapshot's own strings).

    ``freeze_from``: after building an index of at least that many skills, every
    object alive is moved out of the cyclic garbage collector's reach (gc.freeze):
    the index and the snapshot it came from are long-lived, and a full collection
    that scans their million objects stalls whichever request triggers it (up to
    half a second at 100,000 skills). None: never. Frozen objects are still freed
    when nothing refers to them any more (an index replaced by a newer one is);
    only garbage in reference cycles alive at that moment is kept.
    """

    def __init__(self, maxsize: int = 4, *, freeze_from: int | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.maxsize = maxsize
        self.freeze_from = freeze_from
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, SkillIndex] = OrderedDict()
        self._filling: dict[Hashable, threading.Lock] = {}
        self.built = self.advanced = 0  # how each index came to be (for tests and benchmarks)

    def index_of(self, store: RedisSkillbookStore) -> SkillIndex:
        """The index of ``store``'s current version: cached, brought forward, or built."""
        version, incarnation, view = store.cached_snapshot_of_incarnation()
        identity = (store.keys.prefix, store.name, incarnation)
        found = self._get(identity)
        if found is not None and found.version == version:
            return found
        with self._lock:
            filling = self._filling.setdefault(identity, threading.Lock())
        with filling:  # requests that miss the same version at once make it once
            found = self._get(identity)
            if found is not None and found.version == version:
                return found
            index = self._advance(store, found, version, incarnation) if found is not None else None
            if index is None:
                index = SkillIndex.build(version, view.skill_columns(FIELDS), incarnation=incarnation)
                self.built += 1
                if self.freeze_from is not None and len(index.texts) >= self.freeze_from:
                    gc.freeze()
            else:
                self.advanced += 1
            self._put(identity, index)
        return index

    def _advance(
        self, store: RedisSkillbookStore, base: SkillIndex, version: int, incarnation: str | None
    ) -> SkillIndex | None:
        """``base`` brought forward to ``version`` through the change log, or None to build anew."""
        behind = version - base.version
        if not 0 < behind <= MAX_ADVANCE:
            return None
        try:
            records = store.changes(base.version, version)
        except ChangelogTrimmedError:
            return None
        if store.cached_snapshot_of_incarnation()[1] != incarnation:
            return None  # deleted and created again meanwhile: these records are another's
        return base.advanced(version, records)

    def _get(self, identity: Hashable) -> SkillIndex | None:
        with self._lock:
            found = self._entries.get(identity)
            if found is not None:
                self._entries.move_to_end(identity)
            return found

    def _put(self, identity: Hashable, index: SkillIndex) -> None:
        with self._lock:
            current = self._entries.get(identity)
            if current is not None and current.version > index.version:
                return  # a newer version was made meanwhile: keep it
            self._entries[identity] = index
            self._entries.move_to_end(identity)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every index."""
        with self._lock:
            self._entries.clear()


# Skills from which the process's cache freezes what is alive after a build (see SkillIndexCache).
FREEZE_FROM = 10_000
DEFAULT_CACHE = SkillIndexCache(freeze_from=FREEZE_FROM)


def skill_index(store: RedisSkillbookStore) -> SkillIndex:
    """The index of ``store``'s current version, from the process's cache."""
    return DEFAULT_CACHE.index_of(store)
