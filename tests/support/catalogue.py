"""A skillbook of 36 skills over interleaved sections, in every state a listing shows."""

from __future__ import annotations

from ace_workers.core.consolidation import ConsolidationBatch, MergeOp
from ace_workers.core.updates import UpdateBatch, UpdateOperation
from ace_workers.distributed.store.store import RedisSkillbookStore

# Interleaved sections, so grouping by section is not the order the skills came in.
SECTIONS = ("billing", "shipping", "billing", "returns", "shipping", "billing")


def seed_catalogue(store: RedisSkillbookStore) -> RedisSkillbookStore:
    """36 skills over 3 sections; 2 archived, 1 pinned, 1 merged away, 1 deleted; every 5th is on refunds."""
    operations = [
        UpdateOperation(
            type="ADD",
            section=SECTIONS[n % len(SECTIONS)],
            content=f"Rule {n}: {'Refund the buyer' if n % 5 == 0 else 'Check the order'} within {n} days.",
        )
        for n in range(36)
    ]
    store.apply(UpdateBatch(operations=operations))
    ids = made_ids(store)
    store.archive([ids[3], ids[4]], actor="user:setup")
    store.pin([ids[0]], actor="user:setup")
    store.apply_consolidation(ConsolidationBatch(operations=[MergeOp(keep_id=ids[6], merge_ids=[ids[7]])]))
    store.apply(UpdateBatch(operations=[UpdateOperation(type="REMOVE", skill_id=ids[8])]))
    return store


def made_ids(store: RedisSkillbookStore) -> list[str]:
    """Every skill id of the store in the order the skills were made."""
    return list(store.export().to_dict()["skills"])
