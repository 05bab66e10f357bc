"""A read-only skillbook snapshot and its prompt index as one binary value, loaded without decoding skills.

Reading a 100,000-skill skillbook whole (every skill's JSON decoded into a Skill,
then the prompt index built from them) took a fresh worker over 30 s. This form
holds what a reader needs as flat arrays: the skills' JSON compressed 64 skills
to a block (a block inflated when one of its skills is asked for,
core/packed_skills.py: 9 MB instead of 41 at 100,000 skills), and the prompt
index's columns (rows, flags, votes, section codes, word ids over one
vocabulary). Loading it reads each array in place from the value (nothing is
copied out of it) and keeps the rows as one buffer, a row decoded when shown.

The value is an uncompressed ``.npz`` (numpy's zip of ``.npy`` arrays) whose
headers are read without unpickling anything; it is untrusted input: every
member must be stored (never inflated by the zip: no zip bomb), within the
value, of its dtype, with the length its header claims, and the header,
lengths, offsets and ranges are checked before anything is built.
SkillbookFormatError says what is wrong; each member's CRC-32 catches a torn or
flipped value. Skills are decoded lazily, so a skill's own fields are not
checked on load: whoever can write this value can write the skills hash too. A
block is inflated no further than its skills' length; one that does not inflate
to exactly that raises SkillbookFormatError naming the value when it is read.
"""

from __future__ import annotations

import io
import itertools
import json
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from ..errors import SkillbookFormatError
from .packed_skills import SKILLS_PER_BLOCK, PackedSkills, SkillBlocks
from .prompt_index import IndexColumns, PromptIndex
from .skill import TAGS, SimilarityDecision
from .skillbook import Skillbook
from .slot_layers import RowBuffer

__all__ = ["COMPACT_FORMAT", "CompactHeader", "pack_snapshot", "unpack_snapshot"]

COMPACT_FORMAT = 2  # 2: the skills' JSON compressed in blocks
_MAGIC = "ace-workers compact snapshot"
# Member -> (dtype kind, itemsize) it must have; every member is one-dimensional.
_MEMBERS: dict[str, tuple[str, int]] = {
    "header": ("u", 1),
    "decisions": ("u", 1),
    "skill_blocks": ("u", 1),
    "block_offsets": ("i", 8),
    "skill_offsets": ("i", 8),
    "id_data": ("u", 1),
    "id_offsets": ("i", 8),
    "line_data": ("u", 1),
    "section_data": ("u", 1),
    "section_offsets": ("i", 8),
    "vocabulary_data": ("u", 1),
    "vocabulary_offsets": ("i", 8),
    "word_starts": ("i", 8),
    "word_ids": ("i", 4),
    "active": ("b", 1),
    "kept_invalid": ("b", 1),
    "kept_archived": ("b", 1),
    "helpful": ("i", 8),
    "harmful": ("i", 8),
    "neutral": ("i", 8),
    "section": ("i", 8),
}
_PER_SLOT = ("active", "kept_invalid", "kept_archived", *TAGS, "section")
# A zip member's local header: signature, then the lengths of its name and extra field at 26.
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_NPY_HEADER_MAX = 4096  # numpy writes 1-D headers of a few dozen bytes


@dataclass(frozen=True)
class CompactHeader:
    """Which skillbook version a compact snapshot holds."""

    version: int
    incarnation: str | None
    skills: int


def pack_snapshot(book: Skillbook, *, version: int, incarnation: str | None) -> bytes:
    """``book`` (a snapshot of ``version`` of the incarnation ``incarnation``) as one binary value."""
    skills, columns, next_id, decisions = book.compact_parts()
    blocks = skills.blocks
    skill_blocks, block_offsets = (
        blocks.compressed if blocks is not None else SkillBlocks.compress(skills.data, skills.offsets)
    )
    ids_data, ids_offsets = _joined(skills.ids)
    sections_data, sections_offsets = _joined(columns["sections"])
    words_data, words_offsets = _joined(columns["vocabulary"])
    header = {
        "magic": _MAGIC,
        "format": COMPACT_FORMAT,
        "version": version,
        "incarnation": incarnation,
        "next_id": next_id,
        "skills": len(skills),
    }
    arrays: dict[str, np.ndarray] = {
        "header": _bytes_array(json.dumps(header).encode()),
        "decisions": _bytes_array(json.dumps(decisions, ensure_ascii=False).encode()),
        "skill_blocks": _bytes_array(skill_blocks),
        "block_offsets": block_offsets,
        "skill_offsets": skills.offsets,
        "id_data": ids_data,
        "id_offsets": ids_offsets,
        # A row never holds a newline (TOON escapes it), so newlines can part them.
        "line_data": _bytes_array("\n".join(columns["lines"]).encode()),
        "section_data": sections_data,
        "section_offsets": sections_offsets,
        "vocabulary_data": words_data,
        "vocabulary_offsets": words_offsets,
        "word_starts": columns["word_starts"],
        "word_ids": columns["word_ids"],
        **{name: columns[name] for name in _PER_SLOT},
    }
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


def unpack_snapshot(data: bytes, source: str) -> tuple[CompactHeader, Skillbook]:
    """The header and read-only snapshot ``data`` holds; SkillbookFormatError naming ``source`` if corrupt."""
    arrays = _read_members(data, source)
    fail = _failing(source)
    header = _header(arrays["header"], fail)
    count = header.skills
    skill_offsets = arrays["skill_offsets"]
    _offsets(skill_offsets, count, int(skill_offsets[-1]) if len(skill_offsets) else 0, "skill_offsets", fail)
    skill_blocks = arrays["skill_blocks"]
    block_count = -(-count // SKILLS_PER_BLOCK)
    block_offsets = _offsets(arrays["block_offsets"], block_count, len(skill_blocks), "block_offsets", fail)
    # Each block is inflated (bounded by its length) when one of its skills is read.
    blocks = SkillBlocks(skill_blocks.data, block_offsets, skill_offsets, source)
    ids = _texts(arrays["id_data"], arrays["id_offsets"], count, "id", fail)
    sections = _texts(arrays["section_data"], arrays["section_offsets"], None, "section", fail)
    vocabulary = _texts(arrays["vocabulary_data"], arrays["vocabulary_offsets"], None, "vocabulary", fail)
    line_data = arrays["line_data"]
    _check_utf8(line_data, "line_data", fail)
    rows = int(np.count_nonzero(line_data == ord("\n"))) + 1 if count else 0
    if rows != count:
        fail(f"holds {rows} rows for {count} skills")
    lines = RowBuffer(line_data.data, RowBuffer.bounds_of(line_data, count))
    for name in _PER_SLOT:
        if len(arrays[name]) != count:
            fail(f"{name!r} holds {len(arrays[name])} values for {count} skills")
    word_ids = arrays["word_ids"]
    word_starts = _offsets(arrays["word_starts"], count, len(word_ids), "word_starts", fail)
    _check_slots(arrays, word_starts, len(sections), fail)
    if len(word_ids) and not (int(word_ids.min()) >= 0 and int(word_ids.max()) < len(vocabulary)):
        fail("a word id is outside the vocabulary")
    columns: IndexColumns = {
        "ids": ids,
        "lines": lines,
        "sections": sections,
        "vocabulary": vocabulary,
        "word_starts": word_starts,
        "word_ids": word_ids,
        **{name: arrays[name] for name in _PER_SLOT},
    }
    try:
        skills = PackedSkills(ids, blocks, skill_offsets)
    except ValueError as exc:
        fail(str(exc))
    next_id = _header_field(arrays["header"], "next_id")
    decisions = _decisions(arrays["decisions"], fail)
    index = PromptIndex.from_columns(columns, skills.slot_of)
    book = Skillbook.from_compact_parts(skills, index, next_id, decisions)
    return header, book


def _failing(source: str) -> Callable[[str], NoReturn]:
    def fail(reason: str) -> NoReturn:
        raise SkillbookFormatError(source, f"compact snapshot {reason}")

    return fail


def _read_members(data: bytes, source: str) -> dict[str, np.ndarray]:
    """Every member of the zip as an array over ``data`` itself (never copied: a snapshot of
    100,000 skills is about 70 MB), checked to be stored, within the value, intact, of its dtype."""
    fail = _failing(source)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = {info.filename: info for info in archive.infolist()}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        fail(f"is unreadable: {exc}")
    expected = {f"{name}.npy" for name in _MEMBERS}
    if set(infos) != expected:
        fail(f"holds members {sorted(infos)}, expected {sorted(expected)}")
    if any(info.compress_type != zipfile.ZIP_STORED for info in infos.values()):
        fail("holds a compressed member; refused (only stored members are read)")
    view = memoryview(data)
    return {name: _member_array(view, infos[f"{name}.npy"], name, fail) for name in _MEMBERS}


def _member_array(
    view: memoryview, info: zipfile.ZipInfo, name: str, fail: Callable[[str], NoReturn]
) -> np.ndarray:
    """The ``.npy`` array stored at ``info`` in ``view``: its bytes checked (CRC-32), then read in place."""
    local = view[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(local) != _LOCAL_HEADER.size:
        fail(f"member {name!r} lies outside the value")
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(local)
    start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    end = start + info.compress_size
    if signature != _LOCAL_SIGNATURE or info.compress_size != info.file_size or end > len(view):
        fail(f"member {name!r} lies outside the value")
    member = view[start:end]
    if zlib.crc32(member) != info.CRC:
        fail(f"member {name!r} is unreadable: it fails its CRC-32 check (torn or changed)")
    kind, size = _MEMBERS[name]
    try:
        header = io.BytesIO(member[:_NPY_HEADER_MAX])
        major, _ = np.lib.format.read_magic(header)
        if major == 1:
            shape, _, dtype = np.lib.format.read_array_header_1_0(header)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(header)
    except ValueError as exc:
        fail(f"member {name!r} is unreadable: {exc}")
    if dtype.hasobject or len(shape) != 1 or dtype.kind != kind or dtype.itemsize != size:
        fail(f"member {name!r} is {dtype} of {len(shape)} dimensions")
    offset = header.tell()
    if shape[0] * size != len(member) - offset:
        fail(f"member {name!r} holds {len(member) - offset} bytes for {shape[0]} values")
    return np.frombuffer(view, dtype=dtype, count=shape[0], offset=start + offset)


def _header(raw: np.ndarray, fail: Callable[[str], NoReturn]) -> CompactHeader:
    try:
        header = json.loads(raw.tobytes())
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("magic") != _MAGIC:
        fail("has no header of this format")
    if header.get("format") != COMPACT_FORMAT:
        fail(f"is format {header.get('format')!r}; this version reads format {COMPACT_FORMAT}")
    for name in ("version", "skills", "next_id"):
        value = header.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            fail(f"header field {name!r} is {value!r}, not a count")
    incarnation = header.get("incarnation")
    if incarnation is not None and not isinstance(incarnation, str):
        fail(f"header field 'incarnation' is {incarnation!r}")
    return CompactHeader(version=header["version"], incarnation=incarnation, skills=header["skills"])


def _header_field(raw: np.ndarray, name: str) -> int:
    value: int = json.loads(raw.tobytes())[name]
    return value


def _offsets(
    offsets: np.ndarray, count: int | None, size: int, name: str, fail: Callable[[str], NoReturn]
) -> np.ndarray:
    """``offsets`` checked: ``count`` + 1 of them, from 0 up to ``size``, never going back."""
    if count is not None and len(offsets) != count + 1:
        fail(f"{name!r} holds {len(offsets)} offsets for {count} entries")
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != size or np.any(np.diff(offsets) < 0):
        fail(f"{name!r} does not run from 0 to {size} in order")
    return offsets


def _check_utf8(raw: np.ndarray, name: str, fail: Callable[[str], NoReturn]) -> None:
    """Fail unless ``raw`` is UTF-8 (its text is read later, a row at a time)."""
    try:
        str(raw.data, "utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{name!r} is not UTF-8 at byte {exc.start}")


def _texts(
    raw: np.ndarray, offsets: np.ndarray, count: int | None, name: str, fail: Callable[[str], NoReturn]
) -> list[str]:
    """The strings ``raw`` holds one after the other, cut at ``offsets``."""
    data = raw.tobytes()
    bounds = _offsets(offsets, count, len(data), f"{name}_offsets", fail).tolist()
    try:
        text = data.decode()
        if len(text) != len(data):  # not ASCII: byte offsets are not character offsets
            return [data[start:end].decode() for start, end in itertools.pairwise(bounds)]
    except UnicodeDecodeError:
        fail(f"a {name} is not UTF-8")
    return [text[start:end] for start, end in itertools.pairwise(bounds)]  # ids: a slice each, no decode


def _check_slots(
    arrays: dict[str, np.ndarray],
    word_starts: np.ndarray,
    sections: int,
    fail: Callable[[str], NoReturn],
) -> None:
    """Each skill exactly one of active, invalid, archived; sections known; rows and words for active ones."""
    active = arrays["active"]
    states = active.astype(np.int8) + arrays["kept_invalid"] + arrays["kept_archived"]
    if np.any(states != 1):
        fail("holds a skill not exactly one of active, invalid, archived")
    section = arrays["section"]
    if len(section) and not (int(section.min()) >= 0 and int(section.max()) < sections):
        fail("holds a section code outside its sections")
    line_data = arrays["line_data"]
    ends = np.concatenate([np.flatnonzero(line_data == ord("\n")), [len(line_data)]])
    shown = np.diff(ends, prepend=-1) > 1  # a row of at least one byte, besides its newline
    if np.any(shown[: len(active)] != active):
        fail("holds a row for an inactive skill, or none for an active one")
    if np.any((np.diff(word_starts) > 0) & ~active):
        fail("holds words for an inactive skill")


def _decisions(raw: np.ndarray, fail: Callable[[str], NoReturn]) -> dict[frozenset[str], SimilarityDecision]:
    try:
        data = json.loads(raw.tobytes())
        if not isinstance(data, dict):
            raise ValueError("not an object")
        decisions = {}
        for pair, value in data.items():
            ids = pair.split(",")
            if len(ids) != 2 or not isinstance(value, dict):
                raise ValueError(f"decision {pair!r} is malformed")
            decisions[frozenset(ids)] = SimilarityDecision.from_dict(value)
        return decisions
    except (ValueError, TypeError) as exc:
        fail(f"similarity decisions are unreadable: {exc}")


def _joined(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` encoded one after the other, and the offsets that cut them apart again."""
    parts = [text.encode() for text in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(part) for part in parts], out=offsets[1:])
    return _bytes_array(b"".join(parts)), offsets


def _bytes_array(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)
