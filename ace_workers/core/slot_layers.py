"""A prompt index's per-slot columns, shared between the versions derived from one another.

A new skillbook version changes a few skills; copying every per-slot list and dict
of a 100,000-skill index for it cost milliseconds per version (and as much to free),
and a version held by a worker thread kept its own copy of each. Each structure
here keeps a base shared by the versions derived from one another (never changed)
and this version's own changes beside it, merged into a new base once they are a
share of it, so a version costs its changes, not the skillbook's size.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar, cast

import numpy as np

__all__ = ["ArrayRoom", "LayeredSlots", "RowBuffer", "SlotOf", "SlotWords"]

T = TypeVar("T")

# A version's own changes are merged into a new base past this share of it (and this many):
# reads then stay close to a plain list's or dict's cost.
_MERGE_SHARE = 8
_MERGE_MIN = 1024
_ABSENT = object()


def _merge_due(own: int, base: int) -> bool:
    return own > max(_MERGE_MIN, base // _MERGE_SHARE)


class RowBuffer(Sequence[str]):
    """Texts kept as one UTF-8 buffer, each followed by a newline, and decoded when read.

    A loaded snapshot's table rows: 100,000 of them as str objects cost about 20 MiB
    and a split on load, where a prompt reads the couple of hundred it shows.
    """

    __slots__ = ("_bounds", "_data")

    def __init__(self, data: bytes | memoryview, bounds: np.ndarray) -> None:
        """Text ``i`` is ``data[bounds[i]:bounds[i + 1] - 1]``: the newline after the last may be left out.

        Trusted: a persisted copy is checked first (compact_snapshot.py).
        """
        self._data = data
        self._bounds = bounds

    @classmethod
    def of(cls, texts: Sequence[str]) -> RowBuffer:
        """``texts`` (none holding a newline) in one buffer."""
        data = "\n".join(texts).encode()
        return cls(data, cls.bounds_of(data, len(texts)))

    @staticmethod
    def bounds_of(data: bytes | memoryview | np.ndarray, count: int) -> np.ndarray:
        """Where each of the ``count`` newline-parted texts of ``data`` starts, and one past its end."""
        raw = np.frombuffer(data, dtype=np.uint8)
        if not count:
            return np.zeros(1, dtype=np.int64)
        newlines = np.flatnonzero(raw == ord("\n"))
        return np.concatenate([[0], newlines + 1, [len(raw) + 1]]).astype(np.int64)

    def char_lengths(self) -> np.ndarray:
        """Each text's length in characters: its bytes less those continuing a UTF-8 character."""
        raw = np.frombuffer(self._data, dtype=np.uint8)
        continuing = np.flatnonzero((raw & 0xC0) == 0x80)  # none in ASCII text: no array per byte
        starts, ends = self._bounds[:-1], self._bounds[1:] - 1
        within = np.searchsorted(continuing, ends) - np.searchsorted(continuing, starts)
        lengths: np.ndarray = (ends - starts - within).astype(np.int32)
        return lengths

    def __getitem__(self, slot: int) -> str:  # type: ignore[override]
        return str(self._data[int(self._bounds[slot]) : int(self._bounds[slot + 1]) - 1], "utf-8")

    def __len__(self) -> int:
        return len(self._bounds) - 1


class LayeredSlots(Generic[T]):
    """A per-slot list of one index version: a shared base, the slots this version set, slots appended."""

    __slots__ = ("base", "own", "tail")

    def __init__(
        self, base: Sequence[T], own: dict[int, T] | None = None, tail: list[T] | None = None
    ) -> None:
        self.base = base  # shared, never changed
        self.own = own if own is not None else {}  # base slots set by this version or its ancestors
        self.tail = tail if tail is not None else []  # slots past the base

    def __getitem__(self, slot: int) -> T:
        value = self.own.get(slot, _ABSENT)
        if value is not _ABSENT:
            return cast(T, value)
        size = len(self.base)
        return self.base[slot] if slot < size else self.tail[slot - size]

    def __setitem__(self, slot: int, value: T) -> None:
        size = len(self.base)
        if slot < size:
            self.own[slot] = value
        else:
            self.tail[slot - size] = value

    def extend(self, values: Iterable[T]) -> None:
        """Append ``values`` as new slots."""
        self.tail.extend(values)

    def __len__(self) -> int:
        return len(self.base) + len(self.tail)

    def __iter__(self) -> Iterator[T]:
        own = self.own
        if own:
            yield from (own.get(slot, value) for slot, value in enumerate(self.base))
        else:
            yield from self.base
        yield from self.tail

    def copy(self) -> LayeredSlots[T]:
        """A copy whose changes are its own; merged into a new base past a share of this one's."""
        if not _merge_due(len(self.own) + len(self.tail), len(self.base)):
            return LayeredSlots(self.base, dict(self.own), list(self.tail))
        values = list(self)
        if isinstance(self.base, RowBuffer):  # rows stay one buffer: str objects cost more than the bytes
            return LayeredSlots(cast(Sequence[T], RowBuffer.of(cast(list[str], values))))
        return LayeredSlots(values)


class SlotOf:
    """Skill id -> slot: one dict shared by the versions derived from one another, and each one's own changes.

    Copying a 100,000-entry dict for every version cost milliseconds each; a version
    copies its own changes only, and merges them into a new shared dict past a share of it.
    """

    __slots__ = ("base", "own")

    def __init__(self, base: dict[str, int], own: dict[str, int | None] | None = None) -> None:
        self.base = base  # shared, never changed
        self.own = own if own is not None else {}  # None: the id has no slot any more

    def get(self, skill_id: str) -> int | None:
        """The slot of ``skill_id``, or None."""
        if skill_id in self.own:
            return self.own[skill_id]
        return self.base.get(skill_id)

    def __getitem__(self, skill_id: str) -> int:
        slot = self.get(skill_id)
        if slot is None:
            raise KeyError(skill_id)
        return slot

    def __setitem__(self, skill_id: str, slot: int) -> None:
        self.own[skill_id] = slot

    def pop(self, skill_id: str) -> int | None:
        """The slot of ``skill_id`` (or None), which has none from now on."""
        slot = self.get(skill_id)
        if slot is not None:
            self.own[skill_id] = None
        return slot

    def copy(self) -> SlotOf:
        """A copy whose changes are its own."""
        if not _merge_due(len(self.own), len(self.base)):
            return SlotOf(self.base, dict(self.own))
        merged = {**self.base, **self.own}
        return SlotOf({key: slot for key, slot in merged.items() if slot is not None})


class SlotWords:
    """Each slot's words: word ids over a shared vocabulary, with the slots changed since kept apart.

    A frozenset of word strings per skill cost 2 KiB each (228 MiB at 100,000
    skills over a 5,000-word vocabulary); ids in one array cost 4 bytes a word.
    """

    __slots__ = ("changed", "starts", "vocabulary", "word_ids")

    def __init__(
        self,
        vocabulary: list[str],
        starts: np.ndarray,
        word_ids: np.ndarray,
        changed: dict[int, tuple[str, ...]] | None = None,
    ) -> None:
        self.vocabulary = vocabulary  # shared between versions, never changed
        self.starts = starts
        self.word_ids = word_ids
        self.changed = changed if changed is not None else {}  # slot -> its words (interned)

    def of(self, slot: int) -> Sequence[str]:
        """The words ``slot`` is found by."""
        words = self.changed.get(slot)
        if words is not None:
            return words
        if slot + 1 >= len(self.starts):
            return ()
        vocabulary = self.vocabulary
        ids = self.word_ids[int(self.starts[slot]) : int(self.starts[slot + 1])].tolist()
        return [vocabulary[word_id] for word_id in ids]

    def copy(self) -> SlotWords:
        """A copy whose changes are its own (the arrays are shared: never changed in place)."""
        return SlotWords(self.vocabulary, self.starts, self.word_ids, dict(self.changed))


class ArrayRoom:
    """A per-slot array's buffer with room past its used length, for versions that append slots.

    Appending a skill to a 100,000-slot index used to copy each of its arrays; a version
    now takes the next slots of the buffer its parent's array is a view of, when no other
    version took them first (their views end before: they never see the new slots).
    """

    __slots__ = ("_lock", "buffer", "used")

    def __init__(self, buffer: np.ndarray, used: int) -> None:
        self.buffer = buffer  # zero past ``used``: only a claim writes there
        self.used = used
        self._lock = threading.Lock()  # derivations from one index may run side by side

    def claim(self, length: int, extra: int) -> bool:
        """Take ``extra`` slots after the first ``length``, if they are the next free ones."""
        with self._lock:
            if self.used != length or length + extra > len(self.buffer):
                return False
            self.used = length + extra
            return True

    @classmethod
    def grown(cls, array: np.ndarray, room: ArrayRoom | None, extra: int) -> tuple[np.ndarray, ArrayRoom]:
        """``array`` and ``extra`` zero slots after it: in ``room`` if free, else in a new buffer."""
        length = len(array)
        if room is not None and room.claim(length, extra):
            return room.buffer[: length + extra], room
        size = length + extra
        buffer = np.zeros(size + max(_MERGE_MIN, size // _MERGE_SHARE), dtype=array.dtype)
        buffer[:length] = array
        return buffer[:size], cls(buffer, size)
