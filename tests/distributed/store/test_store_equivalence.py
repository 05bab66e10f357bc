"""The store's O(k) apply has exactly the semantics of the core Skillbook's apply_update.

Seeded random batches, built to hit the corner cases (duplicate ADDs across and
within batches, hallucinated and LLM-chosen ids, updates that make two skills
say the same, removals of skills added in the same batch), go to a core
Skillbook and to the Redis store; reports, skills and their order must match
after each batch.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.core import Skillbook, UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore
from tests.support.fixtures import server_or_cluster
from tests.support.provenance import without_times

SECTIONS = ["math", "Math", " math ", "data loading", "reading"]
CONTENTS = [
    "Check units.",
    "check  units",
    "Estimate first",
    "Read the question twice",
    "Draw it",
    "Draw it.",
]


def _comparable(book: Skillbook) -> dict[str, Any]:
    data = without_times(book.to_dict())  # wall-clock times differ between the two
    return {
        "skills": data["skills"],
        "order": list(data["skills"]),  # the same insertion order, so prompts list skills alike
        "next_id": data["next_id"],
    }


def _random_operation(rng: random.Random, known: list[str]) -> UpdateOperation:
    kind = rng.choice(["ADD", "ADD", "ADD", "UPDATE", "TAG", "TAG", "REMOVE"])
    existing = rng.choice(known) if known and rng.random() < 0.8 else f"ghost-{rng.randint(1, 99):05d}"
    source = {"sample": rng.randint(0, 9)} if rng.random() < 0.3 else None
    if kind == "ADD":
        chosen = rng.choice(
            [
                None,
                None,
                None,
                existing,
                "Bad Id!",
                f"math-{rng.randint(1, 60):05d}",
                f"custom-{rng.randint(1, 9):05d}",
            ]
        )
        return UpdateOperation(
            type="ADD",
            section=rng.choice(SECTIONS),
            content=rng.choice(CONTENTS) if rng.random() < 0.7 else f"Lesson {rng.randint(0, 30)}",
            skill_id=chosen,
            justification=rng.choice(["", "because"]),
            insight_source=source,
        )
    if kind == "UPDATE":
        return UpdateOperation(
            type="UPDATE",
            skill_id=existing,
            content=rng.choice(CONTENTS),
            evidence="seen",
            insight_source=source,
        )
    if kind == "TAG":
        counts = {
            tag: rng.randint(0, 3) for tag in rng.sample(["helpful", "harmful", "neutral"], rng.randint(1, 3))
        }
        return UpdateOperation(type="TAG", skill_id=existing, metadata=counts, insight_source=source)
    return UpdateOperation(type="REMOVE", skill_id=existing, insight_source=source)


def _start() -> Skillbook:
    """A loaded skillbook with a soft-removed skill and an odd section, as files can hold."""
    book = Skillbook()
    book.add_skill("math", "Check units.")
    book.add_skill("reading", "Read the question twice")
    book.add_skill("math", "Estimate first")
    book.remove_skill("math-00003", soft=True)
    return Skillbook.from_dict(book.to_dict())


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_batches_give_the_same_skillbook_as_the_core(store: RedisSkillbookStore, seed: int) -> None:
    rng = random.Random(seed)
    core = _start()
    store.import_skillbook(_start())
    for number in range(40):
        known = [s.id for s in core.skills(include_invalid=True)]
        operations = [_random_operation(rng, known) for _ in range(rng.randint(1, 5))]
        work = UpdateBatch(reasoning=f"batch {number}", operations=operations)
        expected = core.apply_update(work)
        result = store.apply(work, base_version=store.version())
        assert result.report == expected, f"seed {seed}, batch {number}: {work.model_dump()}"
        assert _comparable(store.snapshot()[1]) == _comparable(core), f"seed {seed}, batch {number}"
    assert store.version() == 41
    assert len(core) > 3  # the batches did build a skillbook


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """The store's behaviour on one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)
