"""Interval steps fire on every interval-th sample, counted from 1; an unset index never fires."""

from __future__ import annotations

from pathlib import Path

from ace_workers.core import ACEStepContext, Skillbook, SkillbookView
from ace_workers.steps import CheckpointStep, DeduplicateStep


class CountingManager:
    """A DeduplicationManagerLike that counts how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    def get_similarity_report(self, skillbook: Skillbook) -> str | None:
        self.calls += 1
        return None


def test_an_unset_index_never_triggers_a_checkpoint(tmp_path: Path) -> None:
    book = Skillbook()
    step = CheckpointStep(tmp_path, book, interval=1)
    ctx = ACEStepContext(skillbook=SkillbookView(book))
    step(ctx)
    assert list(tmp_path.iterdir()) == []
    step(ctx.replace(global_sample_index=1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint_1.json", "latest.json"]


def test_an_unset_index_never_triggers_deduplication() -> None:
    book = Skillbook()
    manager = CountingManager()
    step = DeduplicateStep(manager, book, interval=2)
    for index in (0, 1, 2, 3, 4):
        step(ACEStepContext(skillbook=SkillbookView(book), global_sample_index=index))
    assert manager.calls == 2
