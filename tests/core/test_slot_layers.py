"""Per-slot columns shared between index versions read like plain lists; a version's writes stay its own."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ace_workers.core import slot_layers
from ace_workers.core.slot_layers import ArrayRoom, LayeredSlots, RowBuffer

TEXTS = ["", "plain", "", "caf\u00e9 na\u00efve", "\u4e2d\u6587 and \U0001f600", "tab\tinside"]


def test_a_row_buffer_gives_back_each_text() -> None:
    assert list(RowBuffer.of(TEXTS)) == TEXTS


@pytest.mark.parametrize("texts", [[], [""], ["", ""], TEXTS])
def test_a_row_buffer_counts_characters_not_bytes(texts: list[str]) -> None:
    assert RowBuffer.of(texts).char_lengths().tolist() == [len(text) for text in texts]


@pytest.mark.parametrize("seed", range(6))
def test_layered_slots_read_as_a_list_would_through_copies_and_merges(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slot_layers, "_MERGE_MIN", 3)  # merge often
    rng = random.Random(seed)
    base = [f"row {n}" for n in range(rng.randint(0, 12))]
    layered, reference = LayeredSlots(RowBuffer.of(base)), list(base)
    for _ in range(60):
        older, older_reference = layered, list(reference)
        layered = layered.copy()
        if reference and rng.random() < 0.6:
            slot = rng.randrange(len(reference))
            layered[slot] = reference[slot] = f"set {rng.random()}"
        else:
            extra = [f"new {rng.random()}" for _ in range(rng.randint(1, 3))]
            layered.extend(extra)
            reference.extend(extra)
        assert list(layered) == reference
        assert [layered[slot] for slot in range(len(reference))] == reference
        assert list(older) == older_reference  # the version before is left as it was
    assert isinstance(layered.base, RowBuffer)  # rows merged stay one buffer


def test_versions_appending_to_one_array_never_see_each_others_slots() -> None:
    parent, room = ArrayRoom.grown(np.arange(5), None, 0)
    first, first_room = ArrayRoom.grown(parent, room, 2)  # takes the room after the parent
    first[5:] = [50, 51]
    second, second_room = ArrayRoom.grown(parent, room, 1)  # the room is taken: a buffer of its own
    second[5:] = [60]
    assert first_room is room
    assert second_room is not room
    assert parent.tolist() == [0, 1, 2, 3, 4]
    assert first.tolist() == [0, 1, 2, 3, 4, 50, 51]
    assert second.tolist() == [0, 1, 2, 3, 4, 60]
    grandchild, _ = ArrayRoom.grown(first, first_room, 1)  # the next free slots: same buffer
    assert np.shares_memory(grandchild, first)
    assert grandchild.tolist() == [0, 1, 2, 3, 4, 50, 51, 0]
