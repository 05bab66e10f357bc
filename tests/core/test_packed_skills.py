"""Packed and layered skill mappings keep a dict's contents and order, version after version."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ace_workers.core import packed_skills
from ace_workers.core.packed_skills import LayeredSkills, PackedSkills, attribute_columns, layer_changes
from ace_workers.core.skill import Skill


def skill(skill_id: str, rng: random.Random) -> Skill:
    content, helpful = f"text {rng.random()}", rng.randint(0, 3)
    pinned = rng.random() < 0.3  # left out of a skill's JSON when unset: read back as False
    return Skill(id=skill_id, section=rng.choice("ab"), content=content, helpful=helpful, pinned=pinned)


def as_a_dict_would(
    skills: dict[str, Skill], final: dict[str, Skill | None], appended: list[str]
) -> dict[str, Skill]:
    """The reference: a copied dict, each id set or popped, the appended ones moved to the end."""
    result = dict(skills)
    for skill_id, value in final.items():
        if value is None or skill_id in appended:
            result.pop(skill_id, None)
        if value is not None:
            result[skill_id] = value
    for skill_id in appended:
        result[skill_id] = result.pop(skill_id)
    return result


def random_version(
    rng: random.Random, current: dict[str, Skill], number: int
) -> tuple[dict[str, Skill | None], list[str], int]:
    final: dict[str, Skill | None] = {}
    appended: list[str] = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        if kind < 0.3 or not current:
            new = f"n{number}"
            number += 1
            final[new] = skill(new, rng)
            appended.append(new)
        elif kind < 0.5:
            final[rng.choice(list(current))] = None
        elif kind < 0.6:  # removed earlier and added again: it goes to the end
            again = rng.choice(list(current))
            final[again] = skill(again, rng)
            appended.append(again)
        else:
            changed = rng.choice(list(current))
            final[changed] = skill(changed, rng)
    appended = list(dict.fromkeys(i for i in appended if final.get(i) is not None))
    return final, appended, number


# What the console's skill index reads of every skill (skill_columns), pinned among them.
COLUMNS = ("id", "section", "content", "helpful", "harmful", "neutral", "pinned", "status", "created_at")


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("repack_min", [2, 10_000])  # packed again often, or layered all along
def test_layered_versions_hold_what_a_copied_dict_holds_in_the_same_order(
    seed: int, repack_min: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packed_skills, "_REPACK_MIN", repack_min)
    rng = random.Random(seed)
    reference = {f"s{index}": skill(f"s{index}", rng) for index in range(rng.randint(0, 30))}
    current = layer_changes(PackedSkills.pack(reference), {}, [])
    number, kinds = 0, set()
    for _ in range(30):
        final, appended, number = random_version(rng, reference, number)
        reference = as_a_dict_would(reference, final, appended)
        current = layer_changes(current, final, appended)
        assert list(current) == list(reference)
        assert len(current) == len(reference)
        assert {i: current[i].to_dict() for i in current} == {i: s.to_dict() for i, s in reference.items()}
        assert all((i in current) == (i in reference) for i in final)
        assert current.columns(COLUMNS) == attribute_columns(reference, COLUMNS)
        kinds.add(type(current))
    assert kinds == ({PackedSkills, LayeredSkills} if repack_min == 2 else {LayeredSkills})


def test_a_packed_skill_is_decoded_anew_on_each_read() -> None:
    packed = PackedSkills.pack({"a-1": Skill(id="a-1", section="a", content="check units")})
    assert packed["a-1"].content == "check units"
    assert packed["a-1"] is not packed["a-1"]
    with pytest.raises(KeyError):
        packed["a-2"]


def test_packed_columns_refuse_a_skill_without_a_field_every_skill_has() -> None:
    packed = PackedSkills(["a-1"], b'{"id":"a-1","section":"a"}', np.array([0, 26]))
    assert packed.columns(["id", "pinned"]) == {"id": ["a-1"], "pinned": [False]}
    with pytest.raises(KeyError, match="content"):
        packed.columns(["content"])


def test_packed_skills_refuse_writes() -> None:
    packed = PackedSkills.pack({})
    with pytest.raises(TypeError, match="read-only"):
        packed["a-1"] = Skill(id="a-1", section="a", content="x")
