"""Pin, archive and restore on the in-process skillbook, and which skills are stale."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ace_workers.core import DeleteOp, KeepOp, MergeOp, Skillbook, UpdateOp
from ace_workers.core.consolidation import check_consolidation
from ace_workers.core.lifecycle_rules import RecentTouches, StaleRule, find_stale_skills
from ace_workers.core.prompt_budget import PromptBudget
from ace_workers.errors import InvalidConsolidationError, PinnedSkillError, SkillStateError, UnknownSkillError
from tests.support.operations import batch, remove

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def two_skills() -> tuple[Skillbook, str, str]:
    book = Skillbook()
    kept = book.add_skill("math", "Check units before adding.").id
    other = book.add_skill("math", "Estimate the answer first.").id
    return book, kept, other


def test_a_skillmanager_remove_of_a_pinned_skill_is_skipped_and_reported() -> None:
    book, pinned, other = two_skills()
    book.pin_skill(pinned, actor="user:ann")
    report = book.apply_update(batch(remove(pinned), remove(other)))
    assert report.pinned == [(0, pinned)]
    assert report.removed == [other]
    assert report.skipped_ops == 1
    assert book.get_skill(pinned) is not None


def test_remove_skill_refuses_a_pinned_skill_until_it_is_unpinned() -> None:
    book, pinned, _ = two_skills()
    book.pin_skill(pinned)
    with pytest.raises(PinnedSkillError, match=f"skill '{pinned}' is pinned, so it cannot be removed"):
        book.remove_skill(pinned)
    book.unpin_skill(pinned)
    book.remove_skill(pinned)
    assert pinned not in book


def test_an_archived_skill_leaves_the_prompt_and_the_count_and_restore_brings_it_back() -> None:
    book, archived, other = two_skills()
    budget = PromptBudget(max_skills=10)
    book.as_prompt(budget, "units")  # builds the prompt index, which the archive must drop
    skill = book.archive_skill(archived, actor="user:ann", reason="outdated")
    assert skill.status == "archived"
    assert skill.archive_info is not None
    assert (skill.archive_info["by"], skill.archive_info["reason"]) == ("user:ann", "outdated")
    assert "Check units" not in book.as_prompt()
    assert "Check units" not in book.as_prompt(budget, "units")
    assert len(book) == 1
    assert book.stats()["archived"] == 1
    assert book.stats()["invalid"] == 0
    restored = book.restore_skill(archived)
    assert (restored.status, restored.archive_info) == ("active", None)
    assert "Check units" in book.as_prompt(budget, "units")
    assert len(book) == 2
    assert other in book


def test_archiving_a_pinned_skill_is_refused_with_why() -> None:
    book, pinned, _ = two_skills()
    book.pin_skill(pinned)
    with pytest.raises(PinnedSkillError, match="is pinned, so it cannot be archived; unpin it first"):
        book.archive_skill(pinned)
    assert book.get_skill(pinned).status == "active"  # type: ignore[union-attr]


def test_lifecycle_calls_name_an_unknown_or_removed_skill() -> None:
    book, removed, _ = two_skills()
    book.remove_skill(removed, soft=True)
    with pytest.raises(UnknownSkillError, match="no skill with id 'math-00099'"):
        book.archive_skill("math-00099")
    with pytest.raises(SkillStateError, match="was removed"):
        book.archive_skill(removed)
    with pytest.raises(SkillStateError, match="was removed"):
        book.pin_skill(removed)


def test_the_file_format_keeps_pins_and_archives_and_omits_them_when_unset() -> None:
    book, pinned, archived = two_skills()
    plain = book.to_dict()["skills"][pinned]
    assert "pinned" not in plain
    assert "archive_info" not in plain
    book.pin_skill(pinned)
    book.archive_skill(archived, reason="old")
    loaded = Skillbook.loads(book.dumps())
    assert loaded.get_skill(pinned).pinned  # type: ignore[union-attr]
    assert loaded.get_skill(archived).is_archived  # type: ignore[union-attr]
    assert [s.id for s in loaded.skills()] == [pinned]


def test_consolidation_refuses_to_merge_delete_or_rewrite_a_pinned_skill() -> None:
    book, pinned, other = two_skills()
    book.pin_skill(pinned)
    skills = {s.id: s for s in book.skills()}
    for op in (
        MergeOp(keep_id=other, merge_ids=[pinned]),
        MergeOp(keep_id=pinned, merge_ids=[other]),
        DeleteOp(skill_id=pinned),
        UpdateOp(skill_id=pinned, new_content="Something else."),
    ):
        with pytest.raises(InvalidConsolidationError, match=f"skill '{pinned}' is pinned") as caught:
            check_consolidation([op], skills)
        assert caught.value.skill_id == pinned
    check_consolidation([KeepOp(skill_ids=[pinned, other])], skills)  # a decision only


def test_a_merge_through_the_skillbook_leaves_a_pinned_pair_as_it_was() -> None:
    book, pinned, other = two_skills()
    book.pin_skill(pinned)
    with pytest.raises(InvalidConsolidationError):
        book.apply_consolidation([MergeOp(keep_id=other, merge_ids=[pinned])])
    assert [s.id for s in book.skills()] == [pinned, other]


def aged(book: Skillbook, skill_id: str, days: int) -> None:
    book._skills[skill_id].updated_at = (NOW - timedelta(days=days)).isoformat()


def test_stale_by_days_skips_pinned_archived_and_recently_tagged_skills() -> None:
    book = Skillbook()
    ids = [book.add_skill("math", f"Rule {n}.").id for n in range(5)]
    old, pinned, archived, fresh, young = ids
    for skill_id in (old, pinned, archived, fresh):
        aged(book, skill_id, 40)
    aged(book, young, 3)
    book.pin_skill(pinned)
    book.archive_skill(archived)
    book.tag_skill(fresh, "helpful")  # a tag moves updated_at: the skill was used
    candidates = find_stale_skills(book.skills(include_invalid=True), StaleRule(days=30), now=NOW)
    assert [c.skill_id for c in candidates] == [old]
    assert candidates[0].reason == "not tagged or updated for 40 days"


def test_stale_by_batches_needs_enough_batches_and_both_measures_must_hold() -> None:
    book = Skillbook()
    used, unused, recent_but_old = (book.add_skill("math", f"Rule {n}.").id for n in range(3))
    for skill_id in (used, unused):
        aged(book, skill_id, 40)
    touches = RecentTouches(frozenset({used}), batches=3, complete=True)
    by_batches = find_stale_skills(book.skills(), StaleRule(batches=3), now=NOW, recent=touches)
    assert [c.skill_id for c in by_batches] == [unused, recent_but_old]
    assert by_batches[0].reason == "not tagged or updated by the last 3 batches"
    both = find_stale_skills(book.skills(), StaleRule(days=30, batches=3), now=NOW, recent=touches)
    assert [c.skill_id for c in both] == [unused]
    too_few = RecentTouches(frozenset(), batches=1, complete=False)
    assert find_stale_skills(book.skills(), StaleRule(batches=3), now=NOW, recent=too_few) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs days, batches or both"),
        ({"days": 0}, "days must be above 0"),
        ({"batches": 0}, "at least 1"),
    ],
)
def test_a_stale_rule_is_checked_when_made(options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StaleRule(**options)  # type: ignore[arg-type]


def test_the_harmful_prune_rule_of_dedup_never_deletes_a_pinned_skill() -> None:
    from ace_workers.protocols.deduplication import PruneRule

    book, pinned, other = two_skills()
    for skill_id in (pinned, other):
        book.tag_skill(skill_id, "harmful", 5)
    book.pin_skill(pinned)
    rule = PruneRule(min_tags=1, harmful_margin=1)
    assert [s.id for s in book.skills() if rule.applies_to(s)] == [other]
