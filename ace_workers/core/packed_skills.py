"""Read-only skill mappings for big snapshots: skills kept as encoded JSON, and versions layered on them.

A snapshot of 100,000 skills held as Skill objects costs about 1 KiB each and
seconds to build. :class:`PackedSkills` keeps every skill's JSON in one bytes
buffer instead and decodes a skill only when it is asked for (a prompt needs the
prompt index, not the skills; a reflector asks for the few it cites).
:class:`LayeredSkills` is the next version of a mapping: the skills that changed
on top of the unchanged base, shared, so a version costs its changes only.

Both keep the insertion order a Skillbook's dict has: a skill changed in place
keeps its place, a new or re-added one goes to the end.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import operator
import zlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from ..errors import SkillbookFormatError
from .skill import Skill

__all__ = [
    "SKILLS_PER_BLOCK",
    "LayeredSkills",
    "PackedSkills",
    "SkillBlocks",
    "attribute_columns",
    "encoded_skill",
    "layer_changes",
]

# A layered version is packed again once its own changes are this share of its base:
# iteration and lookups then stay close to a packed mapping's cost.
_REPACK_SHARE = 8
_REPACK_MIN = 4096
# Skills whose JSON a persisted snapshot compresses together: a fifth of the bytes (the JSON of
# 100,000 skills, 41 MB, is 9 MB), and a read decompresses 64 skills' (~26 KB, ~80 us).
SKILLS_PER_BLOCK = 64


def encoded_skill(skill: Skill) -> bytes:
    """The JSON a packed mapping keeps for ``skill`` (its file-format dict)."""
    return json.dumps(skill.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()


class _ReadOnlySkills(MutableMapping[str, Skill]):
    """A skills mapping a Skillbook can hold, which refuses every write (snapshots are shared)."""

    def __setitem__(self, skill_id: str, skill: Skill) -> None:
        raise TypeError("a snapshot's skills are read-only: derive a new version with with_changes")

    def __delitem__(self, skill_id: str) -> None:
        raise TypeError("a snapshot's skills are read-only: derive a new version with with_changes")

    def raw(self, skill_id: str) -> bytes:
        """The encoded JSON of one skill (KeyError if absent)."""
        raise NotImplementedError

    def columns(self, names: Sequence[str]) -> dict[str, list[Any]]:
        """The named fields of every skill, a list each in insertion order (Skillbook.skill_columns)."""
        raise NotImplementedError


def attribute_columns(skills: Mapping[str, Skill], names: Sequence[str]) -> dict[str, list[Any]]:
    """The named fields of every skill of ``skills``, read attribute by attribute (no copy of a skill)."""
    values = skills.values()
    return {name: list(map(operator.attrgetter(name), values)) for name in names}


def _field_default(name: str) -> Any:
    """What Skill.from_dict gives a field its JSON leaves out (to_dict omits the unset lifecycle ones)."""
    spec = next(spec for spec in dataclasses.fields(Skill) if spec.name == name)
    # A factory's value (a time) is a str, shared safely; MISSING for a field with no default.
    return spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default


class SkillBlocks:
    """Skills' JSON compressed SKILLS_PER_BLOCK at a time (a loaded snapshot's), a block
    decompressed when one of its skills is read (the last one kept: reads in order reuse it)."""

    __slots__ = ("_block_offsets", "_data", "_last", "_offsets", "source")

    def __init__(self, data: bytes | memoryview, block_offsets: np.ndarray, offsets: np.ndarray, source: str):
        """Block ``b`` is ``data[block_offsets[b]:block_offsets[b + 1]]``, of skills ``b * SKILLS_PER_BLOCK``
        on; ``offsets`` are the skills' as if uncompressed. ``source`` names the value in errors."""
        self._data = data
        self._block_offsets = block_offsets
        self._offsets = offsets
        self.source = source
        self._last: tuple[int, bytes] | None = None

    @property
    def compressed(self) -> tuple[bytes | memoryview, np.ndarray]:
        """The blocks as stored, and where each starts (what ``compress`` returns)."""
        return self._data, self._block_offsets

    @staticmethod
    def compress(data: bytes | memoryview, offsets: np.ndarray) -> tuple[bytes, np.ndarray]:
        """The blocks of the skills whose JSON is ``data`` cut at ``offsets``, and where each block starts."""
        bounds = offsets[::SKILLS_PER_BLOCK].tolist()
        if bounds[-1] != int(offsets[-1]):
            bounds.append(int(offsets[-1]))
        blocks = [zlib.compress(data[start:end], 1) for start, end in itertools.pairwise(bounds)]
        block_offsets = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum([len(block) for block in blocks], out=block_offsets[1:])
        return b"".join(blocks), block_offsets

    def block(self, number: int) -> bytes:
        """The JSON of block ``number``'s skills; SkillbookFormatError unless it inflates to its length."""
        last = self._last
        if last is not None and last[0] == number:
            return last[1]
        first = number * SKILLS_PER_BLOCK
        end = min(first + SKILLS_PER_BLOCK, len(self._offsets) - 1)
        length = int(self._offsets[end]) - int(self._offsets[first])
        raw = self._data[int(self._block_offsets[number]) : int(self._block_offsets[number + 1])]
        inflate = zlib.decompressobj()
        try:
            data = inflate.decompress(raw, length)  # bounded: never more than the block's length
        except zlib.error:
            data = b""
        if len(data) != length or not inflate.eof:
            raise SkillbookFormatError(self.source, f"compact snapshot skill block {number} is corrupt")
        self._last = (number, data)
        return data


class PackedSkills(_ReadOnlySkills):
    """Skills in insertion order, each kept as its JSON in one buffer and decoded when read."""

    __slots__ = ("_blocks", "_data", "_ids", "_offsets", "_slot_of")

    def __init__(self, ids: list[str], data: bytes | memoryview | SkillBlocks, offsets: np.ndarray) -> None:
        """``ids`` in order; skill ``i``'s JSON is ``data[offsets[i]:offsets[i + 1]]`` (``data`` may be
        the blocks that hold it compressed). A loaded snapshot's is a view of its value: never copied.
        """
        if len(offsets) != len(ids) + 1:
            raise ValueError(f"{len(ids)} skills need {len(ids) + 1} offsets, got {len(offsets)}")
        self._ids = ids
        self._slot_of = {skill_id: slot for slot, skill_id in enumerate(ids)}
        if len(self._slot_of) != len(ids):
            raise ValueError("a skill id appears twice")
        self._blocks = data if isinstance(data, SkillBlocks) else None
        self._data = b"" if isinstance(data, SkillBlocks) else data
        self._offsets = offsets

    @classmethod
    def pack(cls, skills: Mapping[str, Skill]) -> PackedSkills:
        """``skills`` packed (a packed or layered mapping gives its unchanged skills' JSON as is)."""
        if isinstance(skills, PackedSkills):
            return skills
        raw = skills.raw if isinstance(skills, _ReadOnlySkills) else None
        ids = list(skills)
        parts = [raw(skill_id) if raw is not None else encoded_skill(skills[skill_id]) for skill_id in ids]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(part) for part in parts], out=offsets[1:])
        return cls(ids, b"".join(parts), offsets)

    @property
    def ids(self) -> list[str]:
        """The skill ids in insertion order (not to be changed)."""
        return self._ids

    @property
    def slot_of(self) -> dict[str, int]:
        """Skill id -> its position in ``ids`` (not to be changed)."""
        return self._slot_of

    @property
    def blocks(self) -> SkillBlocks | None:
        """The compressed blocks this reads its skills from, if it does."""
        return self._blocks

    @property
    def data(self) -> bytes | memoryview:
        """Every skill's JSON, one after the other (packed anew if this holds compressed blocks)."""
        return self._data if self._blocks is None else PackedSkills.pack(self)._data

    @property
    def offsets(self) -> np.ndarray:
        """Where each skill's JSON starts in ``data``, and where the last one ends."""
        return self._offsets

    def raw(self, skill_id: str) -> bytes:
        """The encoded JSON of one skill (KeyError if absent)."""
        slot = self._slot_of[skill_id]
        start, end = int(self._offsets[slot]), int(self._offsets[slot + 1])
        if self._blocks is None:
            return bytes(self._data[start:end])
        number = slot // SKILLS_PER_BLOCK
        base = int(self._offsets[number * SKILLS_PER_BLOCK])
        return self._blocks.block(number)[start - base : end - base]

    def __getitem__(self, skill_id: str) -> Skill:
        data: dict[str, Any] = json.loads(self.raw(skill_id))
        return Skill.from_dict(data)

    def columns(self, names: Sequence[str]) -> dict[str, list[Any]]:
        """The named fields of every skill, from one JSON decode of every skill's JSON.

        A Skill per skill (from_dict) costs ten times as much at 100,000 skills: the
        values are the same, as from_dict keeps a field's JSON value as it is.
        """
        joined = b",".join(self._skill_jsons())
        items: list[dict[str, Any]] = json.loads(b"[" + joined + b"]")
        columns = {}
        for name in names:
            default = _field_default(name)
            if default is dataclasses.MISSING:  # every skill has it: from_dict refuses one without
                columns[name] = list(map(operator.itemgetter(name), items))
            else:  # may be left out: when unset (pinned), or by an older writer
                columns[name] = [item.get(name, default) for item in items]
        return columns

    def _skill_jsons(self) -> list[bytes | memoryview]:
        """Every skill's JSON in insertion order (each compressed block inflated once)."""
        bounds = self._offsets.tolist()
        if self._blocks is None:
            data = self._data
            return [data[start:end] for start, end in itertools.pairwise(bounds)]
        parts: list[bytes | memoryview] = []
        for first in range(0, len(self._ids), SKILLS_PER_BLOCK):
            block, base = self._blocks.block(first // SKILLS_PER_BLOCK), bounds[first]
            last = min(first + SKILLS_PER_BLOCK, len(self._ids))
            parts.extend(
                block[start - base : end - base]
                for start, end in itertools.pairwise(bounds[first : last + 1])
            )
        return parts

    def __contains__(self, skill_id: object) -> bool:
        return skill_id in self._slot_of

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class LayeredSkills(_ReadOnlySkills):
    """A version of a base mapping: some base skills changed in place or gone, new ones at the end."""

    __slots__ = ("_base", "_changed", "_gone", "_tail")

    def __init__(
        self,
        base: Mapping[str, Skill],
        changed: dict[str, Skill],
        gone: set[str],
        tail: dict[str, Skill],
    ) -> None:
        self._base = base  # shared with other versions, never changed
        self._changed = changed  # base ids changed in place (not in gone)
        self._gone = gone  # base ids removed, or moved to the tail
        self._tail = tail  # new or re-added skills, in order

    @property
    def own_changes(self) -> int:
        """How many entries this version keeps beside its base."""
        return len(self._changed) + len(self._gone) + len(self._tail)

    def raw(self, skill_id: str) -> bytes:
        """The encoded JSON of one skill (KeyError if absent)."""
        skill = self._tail.get(skill_id) or self._changed.get(skill_id)
        if skill is not None:
            return encoded_skill(skill)
        if skill_id in self._gone:
            raise KeyError(skill_id)
        base = self._base
        return base.raw(skill_id) if isinstance(base, _ReadOnlySkills) else encoded_skill(base[skill_id])

    def __getitem__(self, skill_id: str) -> Skill:
        skill = self._tail.get(skill_id) or self._changed.get(skill_id)
        if skill is not None:
            return skill
        if skill_id in self._gone:
            raise KeyError(skill_id)
        return self._base[skill_id]

    def __contains__(self, skill_id: object) -> bool:
        if skill_id in self._tail:
            return True
        return skill_id not in self._gone and skill_id in self._base

    def __iter__(self) -> Iterator[str]:
        gone = self._gone
        yield from (skill_id for skill_id in self._base if skill_id not in gone)
        yield from self._tail

    def __len__(self) -> int:
        return len(self._base) - len(self._gone) + len(self._tail)

    def columns(self, names: Sequence[str]) -> dict[str, list[Any]]:
        """The named fields of every skill: the base's columns with this version's changes laid over."""
        base = self._base
        if not isinstance(base, PackedSkills):
            return attribute_columns(self, names)
        columns = base.columns(names)
        slot_of = base.slot_of
        for skill_id, skill in self._changed.items():
            for name in names:
                columns[name][slot_of[skill_id]] = getattr(skill, name)
        if self._gone:
            kept = [slot for slot, skill_id in enumerate(base.ids) if skill_id not in self._gone]
            columns = {name: [column[slot] for slot in kept] for name, column in columns.items()}
        for skill in self._tail.values():
            for name in names:
                columns[name].append(getattr(skill, name))
        return columns


def layer_changes(
    skills: Mapping[str, Skill], final: Mapping[str, Skill | None], appended: list[str]
) -> MutableMapping[str, Skill]:
    """``skills`` with each id of ``final`` set to its skill (None: gone), ``appended`` moved last in order.

    Shares ``skills`` (or its base) instead of copying it: the new mapping costs
    the changes since the base only; past a share of the base it is packed again.
    """
    if isinstance(skills, LayeredSkills):
        base = skills._base
        changed, gone, tail = dict(skills._changed), set(skills._gone), dict(skills._tail)
    else:
        base, changed, gone, tail = skills, {}, set(), {}
    moved = set(appended)
    for skill_id, skill in final.items():
        if skill is None or skill_id in moved:
            changed.pop(skill_id, None)
            tail.pop(skill_id, None)
            if skill_id in base:
                gone.add(skill_id)
        elif skill_id in tail:
            tail[skill_id] = skill
        else:
            changed[skill_id] = skill
    for skill_id in appended:
        skill = final[skill_id]
        assert skill is not None  # appended ids are present
        tail[skill_id] = skill
    layered = LayeredSkills(base, changed, gone, tail)
    if layered.own_changes > max(_REPACK_MIN, len(base) // _REPACK_SHARE):
        return PackedSkills.pack(layered)
    return layered
