"""What a budgeted skills table needs of a skillbook, kept ready: rendered rows, word postings, votes.

Cutting a big skillbook to a prompt budget from scratch touches every skill on
every call: encode every row, split every skill into words, sort them all. The
index does that work once per skill version instead. It is built once for a
skillbook (O(skills)); a read-only snapshot of the next version derives its index
from the skills that changed (flat copies of arrays, lists and dicts, plus the
changed skills' own work). A call then costs the postings of the query's words
and a sort of the skills holding them, whatever the skillbook's size: the skills
holding none are shown in one order whatever the query (votes, then skillbook
order), worked out once per version as a kept prefix (``tie_prefix``), which the
next version follows for its changed slots' cost. A query word most skills hold
falls back to a partition of every slot's score, its ties broken by the kept order.

The selection is exactly :func:`~.prompt_budget.select_within_budget` with the
default (lexical) scorer: the same scores, summed in the same order, the same
ties broken the same way (helpful minus harmful votes, then skillbook order).

Slots: every skill gets a slot in skillbook (insertion) order. A removed skill's
slot stays as a gap; a skill added (or re-added) takes a new slot at the end,
as it goes to the end of the skillbook's dict.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from .prompt_budget import PromptBudget, text_words
from .skill import TAGS, Skill
from .slot_layers import ArrayRoom, LayeredSlots, RowBuffer, SlotOf, SlotWords
from .toon import encode_row

__all__ = ["IndexColumns", "IndexScorer", "PromptIndex"]

_NO_SLOT = np.iinfo(np.int64).max  # the first slot of a section with no active skill
_NO_SLOTS = np.zeros(0, dtype=np.int64)
# The fewest slots of the tie order kept: enough for a default budget's 200 skills and the
# skills holding a query word ahead of them, without a second partition.
_PREFIX_FLOOR = 1024
# The tie key packs (votes, section's first slot, slot) into one int64 while they fit.
_SLOT_BITS = 21
_VOTE_LIMIT = 1 << 19
# The per-slot arrays a persisted snapshot stores (see IndexColumns).
_SLOT_ARRAYS = ("active", "kept_invalid", "kept_archived", *TAGS, "section")
# The per-slot arrays, copied for each derived version.
_COPIED_ARRAYS = (*_SLOT_ARRAYS, "line_chars")

# The columns an index is made of (a persisted snapshot stores them, see compact_snapshot.py):
# per slot ids, rows (a list, or a RowBuffer), flags, votes and section codes; the section names;
# the words as a vocabulary and each slot's word ids (CSR: slot i's are
# word_ids[word_starts[i]:word_starts[i+1]]).
IndexColumns = dict[str, Any]


def _interned_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as text_words finds them, each word's string shared by every skill."""
    return tuple(map(sys.intern, text_words(text)))


class IndexScorer(Protocol):
    """A relevance scorer that scores an index's slots directly (one score per slot; 0 for gaps)."""

    def __call__(self, query: str, index: PromptIndex, skills: Mapping[str, Skill]) -> np.ndarray:
        """Scores of every slot of ``index`` for ``query``; ``skills`` maps the index's ids to skills."""
        ...


class PromptIndex:
    """The prompt view of one skillbook version; never changed once built (derive a new one)."""

    __slots__ = (
        "__weakref__",
        "active",
        "archived",
        "count",
        "harmful",
        "helpful",
        "ids",
        "invalid",
        "kept_archived",
        "kept_invalid",
        "line_chars",
        "lines",
        "neutral",
        "parent",
        "postings",
        "rooms",
        "section",
        "section_codes",
        "section_counts",
        "section_first",
        "slot_of",
        "tag_sums",
        "tie_prefix",
        "total_chars",
        "touched",
        "words_of",
    )

    def __init__(self) -> None:
        self.slot_of = SlotOf({})
        self.ids: LayeredSlots[str | None] = LayeredSlots([])  # slot -> skill id; None once it is gone
        self.lines: LayeredSlots[str] = LayeredSlots([])  # slot -> the skill's table row ("" unless active)
        self.line_chars = np.zeros(0, dtype=np.int32)  # slot -> its row's length in characters
        self.words_of = SlotWords([], np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32))
        self.postings: dict[str, np.ndarray] = {}  # word -> slots of the active skills holding it
        self.section_codes: dict[str, int] = {}
        self.active = np.zeros(0, dtype=bool)
        self.kept_invalid = np.zeros(0, dtype=bool)  # a soft-removed skill at the slot
        self.kept_archived = np.zeros(0, dtype=bool)  # an archived skill at the slot
        self.helpful = np.zeros(0, dtype=np.int64)
        self.harmful = np.zeros(0, dtype=np.int64)
        self.neutral = np.zeros(0, dtype=np.int64)
        self.section = np.zeros(0, dtype=np.int64)  # slot -> section code
        self.rooms: dict[str, ArrayRoom] = {}  # array name -> the buffer it may grow in
        self.section_first = np.zeros(0, dtype=np.int64)  # section code -> its first active slot
        self.section_counts = np.zeros(0, dtype=np.int64)  # section code -> its active skills
        self.count = 0  # active skills
        self.invalid = 0  # skills kept but soft-removed
        self.archived = 0  # skills kept but archived
        self.tag_sums = dict.fromkeys(TAGS, 0)  # over the active skills
        self.total_chars = 0  # of the active rows, newlines included
        # The index this one was derived from, and the slots that changed since: what a
        # scorer with a per-version state of its own (embeddings) needs to follow it.
        self.parent: weakref.ref[PromptIndex] | None = None
        self.touched = np.zeros(0, dtype=np.int64)
        # The first active slots by votes then skillbook order, kept by the first budgeted call.
        self.tie_prefix: np.ndarray | None = None

    # -- building ------------------------------------------------------------------------
    @classmethod
    def build(cls, skills: Mapping[str, Skill], columns: Sequence[str]) -> PromptIndex:
        """The index of ``skills`` (in skillbook order), rows of ``columns``."""
        return cls.from_columns(_columns_of(skills, columns))

    @classmethod
    def from_columns(cls, data: IndexColumns, slot_of: dict[str, int] | None = None) -> PromptIndex:
        """The index held in ``data`` (see IndexColumns; built by ``columns()`` or ``build``).

        Trusts ``data``: a persisted copy is checked first (compact_snapshot.py).
        ``slot_of``: id -> position of ``data["ids"]``, if the caller has it (shared, never changed).
        """
        index = cls()
        ids: list[str] = data["ids"]
        index.ids = LayeredSlots(ids)  # shared with the caller: never changed
        if slot_of is None:
            slot_of = {skill_id: slot for slot, skill_id in enumerate(ids)}
        index.slot_of = SlotOf(slot_of)
        lines: Sequence[str] = data["lines"]
        index.lines = LayeredSlots(lines)
        if isinstance(lines, RowBuffer):
            index.line_chars = lines.char_lengths()
        else:
            index.line_chars = np.fromiter(map(len, lines), dtype=np.int32, count=len(lines))
        index.section_codes = {name: code for code, name in enumerate(data["sections"])}
        for name in _SLOT_ARRAYS:
            setattr(index, name, data[name])
        vocabulary: list[str] = [sys.intern(word) for word in data["vocabulary"]]
        starts, word_ids = data["word_starts"], data["word_ids"]
        index.words_of = SlotWords(vocabulary, starts, word_ids)
        index.postings = _postings(vocabulary, starts, word_ids)
        active = index.active
        active_slots = np.flatnonzero(active)
        sections = len(index.section_codes)
        index.section_first = np.full(sections, _NO_SLOT, dtype=np.int64)
        np.minimum.at(index.section_first, index.section[active_slots], active_slots)
        index.section_counts = np.bincount(index.section[active_slots], minlength=sections).astype(np.int64)
        index.count = len(active_slots)
        index.invalid = int(np.count_nonzero(index.kept_invalid))
        index.archived = int(np.count_nonzero(index.kept_archived))
        index.tag_sums = {tag: int(getattr(index, tag)[active].sum()) for tag in TAGS}
        index.total_chars = int(index.line_chars.sum()) + index.count  # an inactive skill's row is ""
        return index

    def columns(self) -> IndexColumns:
        """This index's columns, its gaps left out (slots renumbered in skillbook order)."""
        kept = [slot for slot, skill_id in enumerate(self.ids) if skill_id is not None]
        vocabulary = list(self.words_of.vocabulary)
        word_id = {word: number for number, word in enumerate(vocabulary)}
        counts: list[int] = []
        ids: list[int] = []
        for slot in kept:
            words = self.words_of.of(slot)
            counts.append(len(words))
            for word in words:
                number = word_id.get(word)
                if number is None:
                    number = word_id[word] = len(vocabulary)
                    vocabulary.append(word)
                ids.append(number)
        picked = np.asarray(kept, dtype=np.int64)
        data: IndexColumns = {
            "ids": [self.ids[slot] for slot in kept],
            "lines": [self.lines[slot] for slot in kept],
            "sections": list(self.section_codes),
            "vocabulary": vocabulary,
            "word_starts": _starts(counts),
            "word_ids": np.asarray(ids, dtype=np.int32),
        }
        for name in _SLOT_ARRAYS:
            data[name] = getattr(self, name)[picked]
        return data

    def derive(
        self,
        skills: Mapping[str, Skill],
        *,
        changed: Iterable[str],
        appended: Sequence[str],
        columns: Sequence[str],
    ) -> PromptIndex:
        """The index of the next version, ``skills``, from this one's.

        ``changed``: ids touched in place (changed, or gone when not in ``skills``);
        ``appended``: ids that went to the end of the skillbook, in order (new or re-added).
        """
        index = self._copy()
        changes = _Changes(index, columns)
        for skill_id in changed:
            slot = index.slot_of.get(skill_id)
            skill = skills.get(skill_id)
            if slot is None:
                continue  # added and removed again within the change: never shown
            changes.clear(slot)
            if skill is None:
                index.ids[slot] = None
                index.slot_of.pop(skill_id)
            else:
                changes.fill(slot, skill)
        for skill_id in appended:
            slot = index.slot_of.pop(skill_id)
            if slot is not None:  # re-added: its old place is left as a gap
                changes.clear(slot)
                index.ids[slot] = None
        changes.append([(skill_id, skills[skill_id]) for skill_id in appended])
        index.parent = weakref.ref(self)
        index.touched = np.fromiter(sorted(changes.touched), dtype=np.int64, count=len(changes.touched))
        index.tie_prefix = self._followed_tie_prefix(index)
        return index

    def _followed_tie_prefix(self, index: PromptIndex) -> np.ndarray | None:
        """This version's kept tie order carried to ``index``, derived from it, for the touched slots' cost.

        The kept slots not touched are ordered again with the touched ones that are active.
        A part of the order stays one while no section's first slot moved (else None: the
        next budgeted call partitions again); a touched slot joins it if it ranks no later
        than its last slot.
        """
        kept = self.tie_prefix
        if kept is None:
            return None
        touched = index.touched
        joined = touched[index.active[touched]]
        if len(kept) < self.count:  # a part: only what ranks within it is known to belong
            if not np.array_equal(index.section_first[: len(self.section_first)], self.section_first):
                return None
            last = kept[-1]
            votes, first = -self._votes(last), self.section_first[self.section[last]]
            their_votes = -index._votes(joined)
            their_first = index.section_first[index.section[joined]]
            within = (their_votes < votes) | (
                (their_votes == votes) & ((their_first < first) | ((their_first == first) & (joined <= last)))
            )
            joined = joined[within]
        slots = np.concatenate([kept[~np.isin(kept, touched)], joined])
        first_slots = index.section_first[index.section[slots]]
        followed: np.ndarray = slots[np.lexsort((slots, first_slots, -index._votes(slots)))]
        return followed

    def _copy(self) -> PromptIndex:
        index = PromptIndex()
        index.slot_of = self.slot_of.copy()
        index.ids = self.ids.copy()
        index.lines = self.lines.copy()
        index.words_of = self.words_of.copy()
        index.postings = dict(self.postings)  # the arrays are replaced, never changed in place
        index.section_codes = dict(self.section_codes)
        for name in _COPIED_ARRAYS:  # shared: the edit copies an array it changes (_Changes)
            setattr(index, name, getattr(self, name))
        index.rooms = dict(self.rooms)
        for name in ("section_first", "section_counts"):  # one value per section: copied
            setattr(index, name, getattr(self, name).copy())
        index.count, index.invalid, index.total_chars = self.count, self.invalid, self.total_chars
        index.archived = self.archived
        index.tag_sums = dict(self.tag_sums)
        return index

    def stats(self) -> dict[str, Any]:
        """Skillbook.stats() of this version: sections, active, invalid and archived skills, tag sums."""
        return {
            "sections": int(np.count_nonzero(self.section_counts)),
            "skills": self.count,
            "invalid": self.invalid,
            "archived": self.archived,
            "tags": dict(self.tag_sums),
        }

    # -- reading ---------------------------------------------------------------------------
    def all_slots(self) -> list[int]:
        """Every active skill's slot, in skillbook order (sections together)."""
        return self._in_skillbook_order(np.flatnonzero(self.active))

    def select(
        self, query: str, budget: PromptBudget, fixed_chars: int, scores: np.ndarray | None = None
    ) -> list[int]:
        """Slots of the skills to show within ``budget``, in skillbook order.

        The same choice as ``select_within_budget``: the most relevant first (by
        ``scores``, one per slot, else the lexical scorer), then the most helpful,
        then skillbook order, each taken while it fits the room left.
        """
        limit = budget.max_skills if budget.max_skills is not None else self.count
        room = budget.max_chars - fixed_chars if budget.max_chars is not None else math.inf
        if scores is None:
            ranked = self._lexical_ranking(query, limit)
            if ranked is not None:
                order, complete = ranked
                chosen = self._take(order, limit, room)
                if len(chosen) >= limit or complete:
                    return self._in_skillbook_order(np.asarray(chosen, dtype=np.int64))
            scores = self._scores(query)  # too many skills hold a query word, or rows were skipped
            self._tie_order(_PREFIX_FLOOR)  # kept for the ties at the threshold (_first_ties)
        wanted = min(self.count, max(limit, 1))
        while True:
            chosen = self._take(self._best(scores, wanted), limit, room)
            # Rows skipped for lack of room leave places for skills further down: look further.
            if len(chosen) >= limit or wanted >= self.count:
                return self._in_skillbook_order(np.asarray(chosen, dtype=np.int64))
            wanted = min(self.count, wanted * 2)

    def _take(self, ranked: np.ndarray, limit: int, room: float) -> list[int]:
        """The slots of ``ranked`` taken in turn while each row fits the room left, ``limit`` at most."""
        chosen: list[int] = []
        sizes = (self.line_chars[ranked] + 1).tolist()  # each row and its newline
        for slot, size in zip(ranked.tolist(), sizes, strict=True):
            if len(chosen) >= limit:
                break
            if size <= room:
                chosen.append(slot)
                room -= size
        return chosen

    def _lexical_ranking(self, query: str, limit: int) -> tuple[np.ndarray, bool] | None:
        """The active slots best first by lexical score for ``query``, from postings and the tie order.

        The skills holding a query word come first, by score, then the others in the
        tie order as far as its kept prefix goes (True: to the last active slot), so a
        call costs the query's postings, not a pass over every slot. None when query
        words are held by too many skills for that to pay (``_best`` partitions instead).
        """
        held = []  # (slots, weight) per query word, in word order as _scores sums them
        for word in sorted(text_words(query)) if query else ():
            slots = self.postings.get(word)
            if slots is not None:
                held.append((slots, math.log(1 + self.count / len(slots))))
        if sum(len(slots) for slots, _ in held) > max(_PREFIX_FLOOR, self.count // 8):
            return None
        scored = np.unique(np.concatenate([slots for slots, _ in held])) if held else _NO_SLOTS
        scores = np.zeros(len(scored))
        for slots, weight in held:  # each slot's weights added in the order _scores adds them
            scores[np.searchsorted(scored, slots)] += weight
        first = self.section_first[self.section[scored]]
        best = scored[np.lexsort((scored, first, -self._votes(scored), -scores))]
        wanted = max(_PREFIX_FLOOR, 2 * (limit + len(scored)))  # room for skipped rows, and held ones
        ties = self._tie_order(wanted)[:wanted]
        rest = ties[~np.isin(ties, scored, assume_unique=True)]  # a held word's skills came first
        return np.concatenate([best, rest]), len(ties) == self.count

    def _tie_order(self, length: int) -> np.ndarray:
        """At least the ``length`` first active slots (all, if fewer) by votes, then skillbook order.

        The order the skills sharing no query word are shown in, whatever the query:
        worked out once per version (a partition of every slot) and kept, longer when asked;
        twice as long as asked, so the next versions can follow it though they take some out.
        """
        kept = self.tie_prefix
        if kept is not None and (len(kept) >= length or len(kept) == self.count):
            return kept
        slots = np.flatnonzero(self.active)
        if 2 * length < len(slots):
            slots = slots[self._first_by_tie_key(slots, 2 * length)]
        first = self.section_first[self.section[slots]]
        kept = slots[np.lexsort((slots, first, -self._votes(slots)))]
        self.tie_prefix = kept  # threads racing here store equal arrays
        return kept

    def _scores(self, query: str) -> np.ndarray:
        """Each slot's lexical relevance to ``query``: the weights of the query words it holds."""
        scores = np.zeros(len(self.ids))
        # Summed in word order, as lexical_relevance does, so equal sets give equal floats.
        for word in sorted(text_words(query)) if query else ():
            slots = self.postings.get(word)
            if slots is not None:
                scores[slots] += math.log(1 + self.count / len(slots))
        return scores

    def _best(self, scores: np.ndarray, wanted: int) -> np.ndarray:
        """The ``wanted`` best active slots, best first: by score, then votes, then skillbook order."""
        scores = np.where(self.active, scores, -1.0)
        if wanted < self.count:
            threshold = _wanted_th_largest(scores, wanted)
            above = np.flatnonzero(scores > threshold)
            candidates = np.concatenate([above, self._first_ties(scores, threshold, wanted - len(above))])
        else:
            candidates = np.flatnonzero(self.active)
        first = self.section_first[self.section[candidates]]
        order = np.lexsort((candidates, first, -self._votes(candidates), -scores[candidates]))
        return candidates[order]

    def _first_ties(self, scores: np.ndarray, threshold: float, need: int) -> np.ndarray:
        """The ``need`` first slots scoring ``threshold`` by votes, then skillbook order, in no set order.

        From the kept tie order when it holds that many (a common query word ties
        thousands of skills), else by a partition of every slot scoring that.
        """
        kept = self.tie_prefix
        if kept is not None:
            found: np.ndarray = kept[scores[kept] == threshold][:need]
            if len(found) == need:
                return found
        ties = np.flatnonzero(scores == threshold)
        return ties[self._first_by_tie_key(ties, need)] if len(ties) > need else ties

    def _first_by_tie_key(self, slots: np.ndarray, need: int) -> np.ndarray:
        """Positions in ``slots`` of the ``need`` first by (most votes, skillbook order), in no order."""
        votes = self._votes(slots)
        first = self.section_first[self.section[slots]]
        if len(self.ids) < (1 << _SLOT_BITS) and np.all(np.abs(votes) < _VOTE_LIMIT):
            key = ((_VOTE_LIMIT - votes) << (2 * _SLOT_BITS)) | (first << _SLOT_BITS) | slots
            return np.argpartition(key, need - 1)[:need] if need > 0 else np.zeros(0, dtype=np.int64)
        return np.lexsort((slots, first, -votes))[:need]

    def _votes(self, slots: np.ndarray) -> np.ndarray:
        """Helpful minus harmful votes of the skills at ``slots``."""
        votes: np.ndarray = self.helpful[slots] - self.harmful[slots]
        return votes

    def _in_skillbook_order(self, slots: np.ndarray) -> list[int]:
        first = self.section_first[self.section[slots]]
        ordered: list[int] = slots[np.lexsort((slots, first))].tolist()
        return ordered


def _wanted_th_largest(scores: np.ndarray, wanted: int) -> float:
    """The ``wanted``-th largest value of ``scores`` (1 <= wanted <= len(scores)).

    np.partition slows down tenfold on many equal values (every skill sharing one
    common query word, or none): it partitions a copy nudged apart by a spread far
    below any real score gap, then checks the value it found is exact.
    """
    size = len(scores)
    nudged = scores + np.arange(size) * (1e-9 / size)
    value = float(scores[np.argpartition(nudged, size - wanted)[size - wanted]])
    if np.count_nonzero(scores > value) < wanted <= np.count_nonzero(scores >= value):
        return value
    levels, counts = np.unique(scores, return_counts=True)  # exact, for scores closer than the nudge
    at_least = np.cumsum(counts[::-1])
    return float(levels[::-1][int(np.searchsorted(at_least, wanted))])


class _Changes:
    """Edits one new (still private) index: clears and fills slots, appends skills.

    The per-slot arrays are shared with the index it was copied from: a write is kept
    aside and an array is copied once, at the end, only if a value of it changed (a vote
    copies one array of votes, not every array of the index).
    """

    def __init__(self, index: PromptIndex, columns: Sequence[str]) -> None:
        self.index = index
        self.columns = columns
        self.removed: dict[str, set[int]] = {}  # word -> slots to take out of its postings
        self.added: dict[str, list[int]] = {}  # word -> slots to put in
        self.stale_sections: set[int] = set()  # whose first slot may have moved back
        self.touched: set[int] = set()  # every slot cleared or filled
        self.writes: dict[str, dict[int, Any]] = {name: {} for name in _COPIED_ARRAYS}
        self.start = len(index.ids)  # the first slot this edit appends: those before, others see

    def _get(self, name: str, slot: int) -> Any:
        """The value of array ``name`` at ``slot`` as this edit leaves it so far."""
        written = self.writes[name]
        return written[slot] if slot in written else getattr(self.index, name)[slot]

    def _set(self, name: str, slot: int, value: Any) -> None:
        self.writes[name][slot] = value

    def clear(self, slot: int) -> None:
        """Take the skill at ``slot`` out of the prompt view (its slot stays)."""
        index = self.index
        self.touched.add(slot)
        if self._get("active", slot):
            self._set("active", slot, False)
            index.count -= 1
            index.total_chars -= int(self._get("line_chars", slot)) + 1
            code = int(self._get("section", slot))
            index.section_counts[code] -= 1
            for tag in TAGS:
                index.tag_sums[tag] -= int(self._get(tag, slot))
            if index.section_first[code] == slot:  # a later slot leaving never moves the first
                self.stale_sections.add(code)
        elif self._get("kept_invalid", slot):
            self._set("kept_invalid", slot, False)
            index.invalid -= 1
        elif self._get("kept_archived", slot):
            self._set("kept_archived", slot, False)
            index.archived -= 1
        for word in index.words_of.of(slot):
            self.removed.setdefault(word, set()).add(slot)
        index.words_of.changed[slot] = ()
        index.lines[slot] = ""
        self._set("line_chars", slot, 0)

    def fill(self, slot: int, skill: Skill) -> None:
        """Show ``skill`` at ``slot`` (an inactive skill keeps the slot, shown nowhere)."""
        index = self.index
        self.touched.add(slot)
        code = self._section_code(skill.section)
        self._set("section", slot, code)
        if skill.is_archived:
            self._set("kept_archived", slot, True)
            index.archived += 1
            return
        if not skill.is_active:
            self._set("kept_invalid", slot, True)
            index.invalid += 1
            return
        line = encode_row([getattr(skill, column) for column in self.columns])
        words = _interned_words(skill.content)
        index.lines[slot] = line
        self._set("line_chars", slot, len(line))
        index.words_of.changed[slot] = words
        self._set("active", slot, True)
        for tag in TAGS:
            self._set(tag, slot, getattr(skill, tag))
            index.tag_sums[tag] += getattr(skill, tag)
        index.section_counts[code] += 1
        index.count += 1
        index.total_chars += len(line) + 1
        for word in words:
            self.added.setdefault(word, []).append(slot)
        index.section_first[code] = min(int(index.section_first[code]), slot)

    def _write_arrays(self) -> None:
        """Each array with a changed value written: copied first if the index before sees that slot."""
        index = self.index
        for name, written in self.writes.items():
            array = getattr(index, name)
            changed = {slot: value for slot, value in written.items() if array[slot] != value}
            if not changed:
                continue
            if min(changed) < self.start:
                array, index.rooms[name] = ArrayRoom.grown(array, None, 0)
                setattr(index, name, array)
            array[np.fromiter(changed, dtype=np.int64, count=len(changed))] = list(changed.values())

    def append(self, items: list[tuple[str, Skill]]) -> None:
        """Give each skill a new slot at the end, in order, then finish the edit."""
        index = self.index
        start, extra = len(index.ids), len(items)
        for name in _COPIED_ARRAYS if extra else ():
            grown, index.rooms[name] = ArrayRoom.grown(getattr(index, name), index.rooms.get(name), extra)
            setattr(index, name, grown)
        index.ids.extend(skill_id for skill_id, _ in items)
        index.lines.extend([""] * extra)
        for offset, (skill_id, skill) in enumerate(items):
            index.slot_of[skill_id] = start + offset
            self.fill(start + offset, skill)
        self._finish()

    def _section_code(self, section: str) -> int:
        index = self.index
        code = index.section_codes.get(section)
        if code is None:
            code = index.section_codes[section] = len(index.section_codes)
            index.section_first = np.append(index.section_first, _NO_SLOT)
            index.section_counts = np.append(index.section_counts, 0)
        return code

    def _finish(self) -> None:
        index = self.index
        self._write_arrays()
        for word in self.removed.keys() | self.added.keys():
            # A slot refilled with the same word (a vote, an edit keeping it) stays where it is.
            added = self.added.get(word, [])
            gone = self.removed.get(word, set()).difference(added)
            new = [slot for slot in added if slot not in self.removed.get(word, ())]
            if not gone and not new:
                continue
            slots = index.postings.get(word, np.zeros(0, dtype=np.int32))
            if gone:
                slots = slots[~np.isin(slots, np.fromiter(gone, dtype=np.int64, count=len(gone)))]
            if new:
                slots = np.concatenate([slots, np.asarray(new, dtype=np.int32)])
            if len(slots):
                index.postings[word] = slots
            else:
                index.postings.pop(word, None)
        for code in self.stale_sections:
            members = np.flatnonzero(index.active & (index.section == code))
            index.section_first[code] = int(members[0]) if len(members) else _NO_SLOT


def _columns_of(skills: Mapping[str, Skill], columns: Sequence[str]) -> IndexColumns:
    """The index columns of ``skills`` in skillbook order: one pass, arrays made once at the end."""
    ids: list[str] = []
    lines: list[str] = []
    section_codes: dict[str, int] = {}
    sections: list[int] = []
    status: list[int] = []  # 0 active, 1 kept invalid, 2 kept archived
    votes: dict[str, list[int]] = {tag: [] for tag in TAGS}
    word_id: dict[str, int] = {}
    counts: list[int] = []
    word_ids: list[int] = []
    for skill_id, skill in skills.items():
        ids.append(skill_id)
        sections.append(section_codes.setdefault(skill.section, len(section_codes)))
        if not skill.is_active:
            status.append(2 if skill.is_archived else 1)
            lines.append("")
            counts.append(0)
            for tag in TAGS:
                votes[tag].append(0)
            continue
        status.append(0)
        lines.append(encode_row([getattr(skill, column) for column in columns]))
        words = text_words(skill.content)
        counts.append(len(words))
        word_ids.extend(word_id.setdefault(word, len(word_id)) for word in words)
        for tag in TAGS:
            votes[tag].append(getattr(skill, tag))
    codes = np.asarray(status, dtype=np.int8)
    data: IndexColumns = {
        "ids": ids,
        "lines": lines,
        "sections": list(section_codes),
        "vocabulary": list(word_id),
        "word_starts": _starts(counts),
        "word_ids": np.asarray(word_ids, dtype=np.int32),
        "active": codes == 0,
        "kept_invalid": codes == 1,
        "kept_archived": codes == 2,
        "section": np.asarray(sections, dtype=np.int64),
    }
    for tag in TAGS:
        data[tag] = np.asarray(votes[tag], dtype=np.int64)
    return data


def _starts(counts: list[int]) -> np.ndarray:
    """Where each slot's words start, and where the last one's end."""
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return starts


def _postings(vocabulary: list[str], starts: np.ndarray, word_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Word -> the slots holding it, in slot order, from each slot's word ids (views of one array)."""
    # Slots as int32: 4 bytes a word of every skill (a 100,000-skill index holds 1.6 million).
    slots = np.repeat(np.arange(len(starts) - 1, dtype=np.int32), np.diff(starts))
    # A stable sort of 16-bit keys is a radix sort: linear, ten times a comparison sort's speed.
    keys = word_ids.astype(np.uint16) if len(vocabulary) <= 1 << 16 else word_ids
    by_word = slots[np.argsort(keys, kind="stable")]
    ends = np.cumsum(np.bincount(word_ids, minlength=len(vocabulary))).tolist()
    postings: dict[str, np.ndarray] = {}
    start = 0
    for word, end in zip(vocabulary, ends, strict=True):
        if end > start:
            postings[word] = by_word[start:end]
        start = end
    return postings
