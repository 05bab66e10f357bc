"""A compact snapshot gives back the same skillbook and the same prompts; a corrupt one is refused by name."""

from __future__ import annotations

import io
import json
import random
import zipfile
from typing import Any

import numpy as np
import pytest

from ace_workers.core import PromptBudget, Skillbook, slot_layers
from ace_workers.core.compact_snapshot import pack_snapshot, unpack_snapshot
from ace_workers.core.packed_skills import PackedSkills, attribute_columns
from ace_workers.core.skill import SimilarityDecision
from ace_workers.errors import SkillbookFormatError
from tests.core.test_prompt_index import BUDGETS, queries, random_book, random_changes


def packed(book: Skillbook) -> Skillbook:
    return unpack_snapshot(pack_snapshot(book, version=7, incarnation="inc"), "test")[1]


def assert_same_book(loaded: Skillbook, book: Skillbook, rng: random.Random) -> None:
    assert loaded.to_dict() == book.to_dict()
    assert loaded.stats() == book.stats()
    assert loaded.as_prompt() == book.as_prompt()
    for budget in BUDGETS:
        for query in queries(rng):
            # The loaded index against a scan of every skill (select_within_budget): the reference.
            reference = book._scanned_prompt(budget, query, None)
            assert loaded.as_prompt(budget, query) == reference, (budget, query)


@pytest.mark.parametrize("seed", range(8))
def test_a_loaded_snapshot_is_the_same_skillbook_with_the_same_prompts(seed: int) -> None:
    rng = random.Random(seed)
    book = random_book(rng, rng.randint(0, 80))
    for skill in book.skills()[: len(book) // 5]:
        book.remove_skill(skill.id, soft=True)
    if len(book) > 2:
        book.archive_skill(book.skills()[0].id)
    loaded = packed(book)
    assert isinstance(loaded._skills, PackedSkills)  # the skills stay encoded until read
    assert_same_book(loaded, book, rng)


@pytest.mark.parametrize("seed", range(6))
def test_versions_derived_from_a_loaded_snapshot_and_packed_again_match_one_read_whole(seed: int) -> None:
    rng = random.Random(seed)
    book = random_book(rng, 30)
    snapshot, number = packed(book), 100
    for version in range(12):
        changes, number = random_changes(rng, snapshot, number)
        snapshot = snapshot.with_changes([changes], next_id=number, order_of_new=lambda i: i)
        whole = Skillbook.from_dict(snapshot.to_dict())
        assert_same_book(snapshot, whole, rng)
        if version % 4 == 3:  # packed again from a derived version, gaps and all
            snapshot = packed(snapshot)
            assert_same_book(snapshot, whole, rng)


@pytest.mark.parametrize("seed", range(3))
def test_versions_derived_past_the_merge_of_their_shared_columns_match_one_read_whole(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slot_layers, "_MERGE_MIN", 2)  # ids, rows and slots merged every few versions
    rng = random.Random(seed)
    snapshot, number = packed(random_book(rng, 30)), 100
    for _ in range(10):
        changes, number = random_changes(rng, snapshot, number)
        snapshot = snapshot.with_changes([changes], next_id=number, order_of_new=lambda i: i)
        assert_same_book(snapshot, Skillbook.from_dict(snapshot.to_dict()), rng)


def test_a_loaded_snapshot_reads_its_arrays_in_place_from_the_value() -> None:
    data = pack_snapshot(random_book(random.Random(4), 40), version=1, incarnation=None)
    index = unpack_snapshot(data, "test")[1]._index
    assert index is not None
    value = np.frombuffer(data, dtype=np.uint8)
    for array in (index.words_of.word_ids, index.helpful, index.active):
        assert np.shares_memory(array, value)  # a view of the value, not a copy
        assert not array.flags.writeable


def test_a_vote_leaves_the_postings_of_the_skills_words_as_they_were() -> None:
    book = packed(random_book(random.Random(5), 40))
    skill = book.skills()[3].to_dict()
    skill["helpful"] += 2
    before = book._prompt_index()
    after = book.with_changes([{skill["id"]: skill}], next_id=book.next_id_number, order_of_new=str)
    words = before.words_of.of(before.slot_of[skill["id"]])
    assert words
    for word in words:  # the same arrays: no posting copied for a vote
        assert after._prompt_index().postings[word] is before.postings[word]


def test_a_snapshot_keeps_next_id_and_similarity_decisions() -> None:
    book = random_book(random.Random(1), 10)
    first, second = (skill.id for skill in book.skills()[:2])
    book.set_similarity_decision(first, second, SimilarityDecision(decision="KEEP", reasoning="distinct"))
    loaded = packed(book)
    assert loaded.next_id_number == book.next_id_number
    assert loaded.has_keep_decision(second, first)


def test_a_snapshot_refuses_writes() -> None:
    loaded = packed(random_book(random.Random(2), 5))
    with pytest.raises(TypeError, match="read-only"):
        loaded.add_skill("math", "a new skill")


def test_the_selection_at_ten_thousand_skills_is_exactly_the_reference_selection() -> None:
    rng = random.Random(11)
    vocabulary = [f"w{index}" for index in range(2_000)]
    book = Skillbook()
    for index in range(10_000):
        skill = book.add_skill(f"s{index % 40}", " ".join(rng.choices(vocabulary, k=rng.randint(8, 16))))
        if index % 3 == 0:
            book.tag_skill(skill.id, "helpful", rng.randint(1, 4))
    loaded = packed(book)
    budget = PromptBudget()
    for query in (" ".join(rng.choices(vocabulary, k=12)), "w1 w2 w3", "nothing shared"):
        assert loaded.as_prompt(budget, query) == book._scanned_prompt(budget, query, None), query


# -- hostile values --------------------------------------------------------------------------------


def members(data: bytes) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name[:-4]: np.lib.format.read_array(archive.open(name)) for name in archive.namelist()}


def rebuilt(arrays: dict[str, np.ndarray], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    return buffer.getvalue()


def with_member(data: bytes, name: str, value: np.ndarray) -> bytes:
    return rebuilt({**members(data), name: value})


def with_short_member(data: bytes, name: str) -> bytes:
    """``data`` with member ``name``'s header claiming one value more than it holds."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, array in members(data).items():
            with archive.open(f"{member}.npy", "w") as out:
                shape = (len(array) + 1,) if member == name else array.shape
                header = {"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": False}
                np.lib.format.write_array_header_1_0(out, {**header, "shape": shape})
                out.write(array.tobytes())
    return buffer.getvalue()


def header_with(data: bytes, **fields: Any) -> bytes:
    header = json.loads(members(data)["header"].tobytes())
    return with_member(data, "header", np.frombuffer(json.dumps({**header, **fields}).encode(), np.uint8))


GOOD = pack_snapshot(random_book(random.Random(3), 20), version=4, incarnation="inc")
CORRUPTIONS = {
    "not a zip": (lambda data: b"garbage" * 10, "unreadable"),
    "torn": (lambda data: data[: len(data) // 2], "unreadable"),
    "flipped": (lambda data: data[:200] + bytes([data[200] ^ 0xFF]) + data[201:], "unreadable"),
    "compressed": (lambda data: rebuilt(members(data), zipfile.ZIP_DEFLATED), "compressed member"),
    "member missing": (
        lambda data: rebuilt({k: v for k, v in members(data).items() if k != "header"}),
        "members",
    ),
    "other format": (lambda data: header_with(data, format=99), "format 99"),
    "no magic": (lambda data: header_with(data, magic="x"), "no header"),
    "count": (lambda data: header_with(data, skills=21), "offsets for 21"),
    "negative version": (lambda data: header_with(data, version=-1), "'version'"),
    "word id": (lambda data: with_member(data, "word_ids", members(data)["word_ids"] + 10**6), "vocabulary"),
    "section": (lambda data: with_member(data, "section", members(data)["section"] + 10**6), "section code"),
    "dtype": (lambda data: with_member(data, "active", members(data)["active"].astype(np.int64)), "'active'"),
    "offsets": (
        lambda data: with_member(data, "skill_offsets", members(data)["skill_offsets"][::-1].copy()),
        "skill_offsets",
    ),
    "short member": (lambda data: with_short_member(data, "helpful"), "member 'helpful' holds"),
    "rows not UTF-8": (
        lambda data: with_member(data, "line_data", np.append(members(data)["line_data"], np.uint8(0xFF))),
        "'line_data' is not UTF-8",
    ),
    "two states": (
        lambda data: with_member(data, "kept_invalid", np.ones_like(members(data)["kept_invalid"])),
        "exactly one",
    ),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_snapshot_is_refused_with_one_line_naming_its_source(corruption: str) -> None:
    corrupt, why = CORRUPTIONS[corruption]
    with pytest.raises(SkillbookFormatError, match=why) as raised:
        unpack_snapshot(corrupt(GOOD), "key 'ace:{sb:book}:compact'")
    assert str(raised.value).startswith("key 'ace:{sb:book}:compact': compact snapshot ")
    assert "\n" not in str(raised.value)


def test_the_untouched_value_loads() -> None:
    header, book = unpack_snapshot(GOOD, "test")
    assert (header.version, header.incarnation, header.skills) == (4, "inc", 20)
    assert len(book) == 20


def test_a_snapshot_keeps_its_skills_compressed_and_gives_each_back() -> None:
    book = random_book(random.Random(6), 150)  # three blocks of skills
    data = pack_snapshot(book, version=1, incarnation=None)
    assert len(members(data)["skill_blocks"]) < len(PackedSkills.pack(book._skills).data)
    loaded = unpack_snapshot(data, "test")[1]
    assert [loaded.get_skill(skill.id) for skill in book.skills()] == book.skills()


def test_a_skill_block_that_does_not_inflate_to_its_length_is_named_when_read() -> None:
    arrays = members(GOOD)
    garbage = np.frombuffer(b"x" * len(arrays["skill_blocks"]), dtype=np.uint8)
    _, loaded = unpack_snapshot(rebuilt({**arrays, "skill_blocks": garbage}), "key 'ace:{sb:book}:compact'")
    with pytest.raises(SkillbookFormatError, match="skill block 0 is corrupt") as raised:
        loaded.get_skill(next(iter(loaded._skills)))
    assert str(raised.value).startswith("key 'ace:{sb:book}:compact': ")


def test_a_loaded_snapshot_gives_the_columns_its_skills_hold_read_from_every_block() -> None:
    book = random_book(random.Random(8), 150)  # three blocks, the last one short
    loaded = unpack_snapshot(pack_snapshot(book, version=1, incarnation=None), "test")[1]
    assert isinstance(loaded._skills, PackedSkills) and loaded._skills.blocks is not None
    names = ("id", "section", "content", "helpful", "pinned", "status")
    assert loaded._skills.columns(names) == attribute_columns(book._skills, names)
