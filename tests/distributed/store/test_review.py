"""Review before apply on the real Redis: the policy, proposals, and each decided exactly once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.core.consolidation import ConsolidationBatch, MergeOp
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache
from ace_workers.distributed.store import StoreBackedSkillbook, WriteScope, write_scope
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.errors import (
    CorruptDataError,
    ProposalConflictError,
    ProposalDecidedError,
    UnknownProposalError,
)
from ace_workers.distributed.store.proposals import ProposalKind, ProposalStatus
from ace_workers.distributed.store.review import AUTO_APPROVE_ACTOR
from ace_workers.distributed.store.review_policy import ReviewPolicy, parse_policy
from tests.support.fixtures import server_or_cluster
from tests.support.hooked_redis import hooked_like
from tests.support.provenance import without_provenance

ALICE = "user:alice"


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """Review's transactions on one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)


def add(content: str, section: str = "lessons") -> UpdateOperation:
    return UpdateOperation(type="ADD", section=section, content=content)


def tag(skill_id: str, **counts: int) -> UpdateOperation:
    return UpdateOperation(type="TAG", skill_id=skill_id, metadata=counts)


def seeded(store: RedisSkillbookStore, *contents: str) -> list[str]:
    """Skills applied directly (as a person would), before any policy; their ids."""
    result = store.apply(UpdateBatch(operations=[add(c) for c in contents]))
    return list(result.report.added)


def learn(store: RedisSkillbookStore, batch: UpdateBatch, key: str = "b1:e1s1:3") -> StoreBackedSkillbook:
    """Write ``batch`` as a learning step does: through the backed skillbook, in a write scope."""
    book = StoreBackedSkillbook(store)
    scope = WriteScope(key_prefix=key, source={"batch": "b1", "epoch": 1, "sample": 1, "step": "ApplyStep"})
    with write_scope(scope):
        book.apply_update(batch)
    return book


def contents(store: RedisSkillbookStore) -> list[str]:
    return sorted(s.content for s in store.snapshot()[1].skills())


# -- the policy ----------------------------------------------------------------------------------


def test_absent_policy_is_auto_and_a_set_policy_is_read_back_and_logged(store: RedisSkillbookStore) -> None:
    assert store.review.policy() == ReviewPolicy()
    assert not store.review.policy().reviews_anything
    version = store.review.set_policy(parse_policy("TAG=auto,ADD=review"), actor=ALICE, note="careful")
    assert store.version() == version == 1
    policy = store.review.policy()
    assert (policy.ADD, policy.TAG, policy.UPDATE) == ("review", "auto", "auto")
    (entry,) = store.history(limit=1)
    assert entry.kind is ChangeKind.REVIEW
    assert entry.source is not None
    assert (entry.source["actor"], entry.source["note"]) == (ALICE, "careful")
    assert entry.source["review_policy"]["ADD"] == "review"


def test_bad_policy_json_in_redis_is_an_error_naming_the_key(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    redis_client.set(store.keys.review_policy, '{"ADD": "sometimes"}')
    with pytest.raises(CorruptDataError) as info:
        store.review.policy()
    assert info.value.key == store.keys.review_policy


@pytest.mark.parametrize(
    ("spec", "named"),
    [("ADD=maybe", "ADD=maybe"), ("MERGE=review", "MERGE=review"), ("ADD", "ADD"), (",", "")],
)
def test_a_policy_spec_that_is_not_understood_is_refused_naming_the_part(spec: str, named: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_policy(spec)
    assert named in str(info.value)


# -- proposing -----------------------------------------------------------------------------------


def test_in_review_mode_a_write_leaves_the_skillbook_unchanged_and_stores_a_proposal(
    store: RedisSkillbookStore,
) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    before = store.version()
    insight = {"sample": 7, "epoch": 1}
    batch = UpdateBatch(
        reasoning="the agent forgot to check units",
        operations=[
            UpdateOperation(type="ADD", section="units", content="Check the units", insight_source=insight),
            tag(rule, helpful=1),
        ],
    )
    learn(store, batch)
    assert store.version() == before
    assert contents(store) == ["Carry the one"]
    assert store.review.pending_count() == 1
    (proposal,) = store.review.proposals()
    assert proposal.kind is ProposalKind.UPDATE
    assert proposal.status is ProposalStatus.PENDING
    assert [op["type"] for op in proposal.operations] == ["ADD", "TAG"]
    assert proposal.reasoning == "the agent forgot to check units"
    assert proposal.source == {"batch": "b1", "epoch": 1, "sample": 1, "step": "ApplyStep"}
    assert proposal.insight_sources == [insight]
    assert proposal.base_version == before
    assert proposal.base_images[rule] is not None
    assert proposal.base_images[rule]["content"] == "Carry the one"


def test_a_redelivered_write_finds_its_proposal_and_stores_no_second_one(store: RedisSkillbookStore) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    batch = UpdateBatch(operations=[add("Check the units")])
    learn(store, batch, key="b1:e1s4:3")
    learn(store, batch, key="b1:e1s4:3")  # the same task, delivered again
    assert store.review.pending_count() == 1
    (proposal,) = store.review.proposals()
    assert proposal.count == 1  # the redelivery is not counted again


def test_a_write_proposing_what_a_pending_proposal_proposes_is_merged_into_it_with_its_source(
    store: RedisSkillbookStore,
) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="b1:e1s4:3")
    learn(store, UpdateBatch(operations=[add("check  the units.")]), key="b2:e1s5:3")  # same, other words
    learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="b2:e1s6:3")
    assert store.review.pending_count() == 2
    merged, other = store.review.proposals()
    assert (merged.count, other.count) == (2, 1)
    assert [o.key for o in merged.occurrences] == ["b1:e1s4:3:w1", "b2:e1s5:3:w1"]
    assert [o.source["sample"] for o in merged.occurrences] == [1, 1]
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="b2:e1s5:3")  # redelivered
    assert store.review.get(merged.id).count == 2


def test_a_write_proposing_what_was_decided_opens_a_new_proposal(store: RedisSkillbookStore) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="k1")
    (first,) = store.review.proposals()
    store.review.reject(first.id, actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="k2")
    (second,) = store.review.proposals()
    assert second.id != first.id
    assert (second.count, store.review.get(first.id).count) == (1, 1)


def test_of_concurrent_writers_proposing_the_same_one_stores_it_and_the_rest_merge(
    redis_client: redis.Redis,
) -> None:
    store = RedisSkillbookStore(redis_client, "book", max_attempts=100, snapshot_cache=SnapshotCache())
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    writers = 6
    barrier = threading.Barrier(writers)

    def propose(number: int) -> None:
        barrier.wait()
        learn(store, UpdateBatch(operations=[add("Check the units")]), key=f"b1:e1s{number}:3")

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(propose, range(writers)))
    (proposal,) = store.review.proposals()
    assert proposal.count == writers
    assert sorted(o.key for o in proposal.occurrences) == sorted(f"b1:e1s{n}:3:w1" for n in range(writers))
    assert len(store.review.proposals(None)) == 1


def test_a_write_merging_into_a_proposal_while_it_is_decided_is_not_lost(
    redis_client: redis.Redis, redis_url: str
) -> None:
    store = RedisSkillbookStore(redis_client, "book")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="k1")
    (proposal,) = store.review.proposals()
    merged: list[int] = []

    def merge_first() -> None:
        # After the reviewer read the proposal, before its MULTI: another sample proposes the same.
        if not merged:
            merged.append(1)
            learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="k2")

    hooked = hooked_like(redis_client, redis_url, merge_first)
    try:
        RedisSkillbookStore(hooked, "book").review.reject(proposal.id, actor=ALICE)
    finally:
        hooked.close()
    rejected = store.review.get(proposal.id)
    assert rejected.status is ProposalStatus.REJECTED
    assert rejected.count == 2  # the merge landed first; the decision, retried, kept it
    assert store.review.pending_count() == 0


def test_a_proposal_restating_an_active_skill_is_a_duplicate_and_approving_it_makes_no_version(
    store: RedisSkillbookStore,
) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="k1")
    (proposal,) = store.review.proposals()
    assert store.review.restated(proposal) == []
    (rule,) = store.apply(UpdateBatch(operations=[add("check the units.")])).report.added  # a person
    assert store.review.restated(proposal) == [rule]
    version, history = store.version(), len(store.history(limit=100))
    decided = store.review.approve(proposal.id, actor="user:bob", note="fine")
    assert decided.status is ProposalStatus.APPROVED
    assert decided.decision is not None
    assert (decided.decision.no_op, decided.decision.version) == (True, None)
    assert store.version() == version
    assert len(store.history(limit=100)) == history
    assert store.review.pending_count() == 0
    with pytest.raises(ProposalDecidedError):  # decided exactly once, without a version too
        store.review.approve(proposal.id, actor=ALICE)


def test_of_two_reviewers_approving_a_duplicate_at_once_one_decides_though_no_version_is_made(
    redis_client: redis.Redis, redis_url: str
) -> None:
    store = RedisSkillbookStore(redis_client, "book")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="k1")
    (proposal,) = store.review.proposals()
    store.apply(UpdateBatch(operations=[add("Check the units")]))  # now it restates a skill
    rival: list[str] = []

    def rival_decides_first() -> None:
        if not rival:
            rival.append(store.review.approve(proposal.id, actor="user:rival").id)

    hooked = hooked_like(redis_client, redis_url, rival_decides_first)
    try:
        with pytest.raises(ProposalDecidedError) as info:
            RedisSkillbookStore(hooked, "book").review.approve(proposal.id, actor=ALICE)
    finally:
        hooked.close()
    assert "user:rival" in str(info.value)
    decided = store.review.get(proposal.id)
    assert decided.decision is not None
    assert (decided.decision.actor, decided.decision.no_op) == ("user:rival", True)


def test_a_policy_rejecting_duplicates_rejects_a_restating_proposal_at_once_and_merges_the_next(
    store: RedisSkillbookStore,
) -> None:
    (rule,) = seeded(store, "Check the units")
    store.review.set_policy(ReviewPolicy.everything("review", duplicates="reject"), actor=ALICE)
    assert "duplicates of active skills rejected" in store.review.policy().describe()
    version = store.version()
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="k1")
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="k2")
    assert store.review.pending_count() == 0
    assert store.version() == version
    (rejected,) = store.review.proposals(ProposalStatus.REJECTED)
    assert rejected.count == 2
    assert rejected.decision is not None
    assert (rejected.decision.actor, rejected.decision.note) == (
        "auto-reject",
        f"restates active skill {rule}",
    )
    store.archive([rule])
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="k3")  # says something new now
    (pending,) = store.review.proposals()
    assert pending.id != rejected.id


def test_a_redelivery_of_an_approved_proposal_does_not_make_it_pending_again(
    store: RedisSkillbookStore,
) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    batch = UpdateBatch(operations=[add("Check the units")])
    learn(store, batch, key="b1:e1s4:3")
    (proposal,) = store.review.proposals()
    store.review.approve(proposal.id, actor=ALICE)
    learn(store, batch, key="b1:e1s4:3")
    assert store.review.get(proposal.id).status is ProposalStatus.APPROVED
    assert store.review.pending_count() == 0
    assert contents(store) == ["Check the units"]


def test_rules_split_a_batch_tags_apply_at_once_and_adds_wait(store: RedisSkillbookStore) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(parse_policy("ADD=review,UPDATE=review,REMOVE=review,TAG=auto"), actor=ALICE)
    before = store.version()
    learn(store, UpdateBatch(operations=[add("Check the units"), tag(rule, helpful=2)]))
    assert store.version() == before + 1  # the TAG applied
    (skill,) = store.snapshot()[1].skills()
    assert (skill.content, skill.helpful) == ("Carry the one", 2)
    (proposal,) = store.review.proposals()
    assert [op["type"] for op in proposal.operations] == ["ADD"]


def test_a_policy_set_while_a_write_is_planned_makes_it_a_proposal(
    redis_client: redis.Redis, redis_url: str
) -> None:
    """The policy is read under the apply's own WATCH: set between its reads and its MULTI, the
    attempt runs again and proposes what the new policy reviews; nothing applies under the old one."""
    store = RedisSkillbookStore(redis_client, "book")
    policy_set: list[int] = []

    def set_policy_first() -> None:
        if not policy_set:
            policy_set.append(1)
            store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)

    hooked = hooked_like(redis_client, redis_url, set_policy_first)
    try:
        learn(RedisSkillbookStore(hooked, "book"), UpdateBatch(operations=[add("Check the units")]))
    finally:
        hooked.close()
    assert contents(store) == []
    (proposal,) = store.review.proposals()
    assert [op["content"] for op in proposal.operations] == ["Check the units"]


def test_a_write_the_policy_reviews_nothing_of_applies_in_one_transaction(store: RedisSkillbookStore) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(parse_policy("ADD=review"), actor=ALICE)
    before = store.version()

    assert store.apply_unless_reviewed(UpdateBatch(operations=[add("Check the units")])) is None
    assert store.version() == before  # nothing written: the caller splits the batch
    result = store.apply_unless_reviewed(UpdateBatch(operations=[tag(rule, helpful=1)]))
    assert result is not None
    assert (result.version, result.report.tagged) == (before + 1, [rule])
    assert store.review.proposals() == []


def test_proposals_page_with_an_offset_and_pick_a_section_before_the_page(store: RedisSkillbookStore) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    for number, op in enumerate([add("Check units", "units"), tag(rule, helpful=1), add("Round", "units")]):
        learn(store, UpdateBatch(operations=[op]), key=f"b1:e1s{number}:3")
    every = store.review.proposals()
    assert len(every) == 3
    assert [p.id for p in store.review.proposals(limit=2, offset=1)] == [every[1].id, every[2].id]
    assert [p.id for p in store.review.proposals(None, limit=1, offset=2)] == [every[2].id]
    units = store.review.proposals(section="units", limit=1, offset=1)
    assert [p.id for p in units] == [every[2].id]
    # The TAG names the lessons skill by its id: it is of section lessons.
    assert [p.id for p in store.review.proposals(section="lessons")] == [every[1].id]
    with pytest.raises(ValueError, match="offset"):
        store.review.proposals(offset=-1)


# -- deciding -----------------------------------------------------------------------------------


def test_approving_applies_the_proposal_as_a_new_version_logged_with_actor_and_note(
    store: RedisSkillbookStore,
) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Check the units")]))
    (proposal,) = store.review.proposals()
    before = store.version()
    decided = store.review.approve(proposal.id, actor="user:bob", note="good rule")
    assert store.version() == before + 1
    assert contents(store) == ["Check the units"]
    assert decided.status is ProposalStatus.APPROVED
    assert decided.decision is not None
    assert (decided.decision.actor, decided.decision.note, decided.decision.version) == (
        "user:bob",
        "good rule",
        before + 1,
    )
    assert store.review.get(proposal.id).status is ProposalStatus.APPROVED
    assert store.review.pending_count() == 0
    (entry,) = store.history(limit=1)
    assert entry.kind is ChangeKind.REVIEW
    assert [op.content for op in entry.operations] == ["Check the units"]
    assert entry.source is not None
    review = entry.source["review"]
    assert (review["proposal"], review["decision"], review["actor"], review["note"]) == (
        proposal.id,
        "approved",
        "user:bob",
        "good rule",
    )
    assert review["time"]
    assert entry.source["sample"] == 1  # the evidence: where it was learned
    added = [i for i, image in entry.after.items() if image is not None]
    assert len(added) == 1
    assert store.diff(before, before + 1)[added[0]][1]["content"] == "Check the units"  # type: ignore[index]


def test_rejecting_leaves_the_skills_unchanged_and_logs_the_decision(store: RedisSkillbookStore) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Always answer 42")]))
    (proposal,) = store.review.proposals()
    before = store.version()
    decided = store.review.reject(proposal.id, actor="user:bob", note="wrong rule")
    assert decided.status is ProposalStatus.REJECTED
    assert contents(store) == []
    assert store.version() == before + 1
    (entry,) = store.history(limit=1)
    assert entry.kind is ChangeKind.REVIEW
    assert (entry.operations, entry.before, entry.after) == ([], {}, {})
    assert entry.source is not None
    assert (entry.source["review"]["decision"], entry.source["review"]["note"]) == ("rejected", "wrong rule")
    assert store.review.proposals(ProposalStatus.REJECTED)[0].id == proposal.id


def test_a_decided_proposal_is_refused_naming_its_status_and_who_decided(store: RedisSkillbookStore) -> None:
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Check the units")]))
    (proposal,) = store.review.proposals()
    store.review.reject(proposal.id, actor="user:bob")
    version = store.version()
    with pytest.raises(ProposalDecidedError) as info:
        store.review.approve(proposal.id, actor=ALICE)
    assert "rejected" in str(info.value)
    assert "user:bob" in str(info.value)
    assert store.version() == version
    with pytest.raises(UnknownProposalError):
        store.review.approve("p-000000000000", actor=ALICE)


def test_of_concurrent_reviewers_exactly_one_decides_and_the_skill_applies_once(
    redis_client: redis.Redis,
) -> None:
    store = RedisSkillbookStore(redis_client, "book", max_attempts=100, snapshot_cache=SnapshotCache())
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[tag(rule, helpful=1), add("Check the units")]))
    (proposal,) = store.review.proposals()
    before = store.version()
    reviewers = 8
    barrier = threading.Barrier(reviewers)

    def review(number: int) -> str:
        barrier.wait()
        try:
            if number % 2:
                store.review.reject(proposal.id, actor=f"user:r{number}")
            else:
                store.review.approve(proposal.id, actor=f"user:r{number}")
        except ProposalDecidedError:
            return "refused"
        return "decided"

    with ThreadPoolExecutor(reviewers) as pool:
        outcomes = list(pool.map(review, range(reviewers)))
    assert outcomes.count("decided") == 1
    assert outcomes.count("refused") == reviewers - 1
    assert store.version() == before + 1
    decided = store.review.get(proposal.id)
    skills = {s.content: s for s in store.snapshot()[1].skills()}
    if decided.status is ProposalStatus.APPROVED:
        assert skills["Carry the one"].helpful == 1
        assert "Check the units" in skills
    else:
        assert skills["Carry the one"].helpful == 0
        assert "Check the units" not in skills


def test_a_conflicting_proposal_is_refused_and_applies_when_approved_despite_it(
    store: RedisSkillbookStore,
) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(parse_policy("UPDATE=review"), actor=ALICE)
    update = UpdateOperation(type="UPDATE", skill_id=rule, content="Carry the one, then add")
    learn(store, UpdateBatch(operations=[update]))
    (proposal,) = store.review.proposals()
    # Since: a person rewrote the skill, and a TAG (no conflict by itself) applied.
    store.apply(UpdateBatch(operations=[UpdateOperation(type="UPDATE", skill_id=rule, content="Carry tens")]))
    assert store.review.conflicts(proposal) == [rule]
    version = store.version()
    with pytest.raises(ProposalConflictError) as info:
        store.review.approve(proposal.id, actor=ALICE)
    assert info.value.skill_ids == [rule]
    assert rule in str(info.value)
    assert store.version() == version
    assert store.review.get(proposal.id).status is ProposalStatus.PENDING
    decided = store.review.approve(proposal.id, actor=ALICE, despite_conflicts=True)
    assert decided.decision is not None
    assert decided.decision.despite_conflicts == [rule]
    assert contents(store) == ["Carry the one, then add"]


def test_counters_changing_since_is_no_conflict(store: RedisSkillbookStore) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(parse_policy("UPDATE=review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[UpdateOperation(type="UPDATE", skill_id=rule, content="Carry it")]))
    (proposal,) = store.review.proposals()
    learn(store, UpdateBatch(operations=[tag(rule, harmful=1)]), key="b1:e1s2:3")  # TAG is auto
    assert store.review.conflicts(proposal) == []
    store.review.approve(proposal.id, actor=ALICE)
    (skill,) = store.snapshot()[1].skills()
    assert (skill.content, skill.harmful) == ("Carry it", 1)


def test_n_agreeing_proposals_apply_their_operation_once_as_auto_approve(store: RedisSkillbookStore) -> None:
    store.review.set_policy(ReviewPolicy.everything("review", auto_approve_after=3), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("check the units.")]), key="b1:e1s1:3")
    learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="b1:e1s2:3")
    learn(store, UpdateBatch(operations=[add("Check  the units")]), key="b1:e1s3:3")
    assert contents(store) == []
    # The two agreeing writes are one proposal counting both (they merged); 42 is the other.
    assert store.review.pending_count() == 2
    before = store.version()
    learn(store, UpdateBatch(operations=[add("Check the units")]), key="b1:e1s4:3")  # the third agreeing
    assert store.version() == before + 1
    assert contents(store) == ["check the units."]  # applied once, in the wording first proposed
    (left,) = store.review.proposals()
    assert left.operations[0]["content"] == "Always answer 42"
    (approved,) = store.review.proposals(ProposalStatus.APPROVED)
    assert approved.count == 3
    assert approved.decision is not None
    assert approved.decision.actor == AUTO_APPROVE_ACTOR
    assert approved.decision.agreeing == ["b1:e1s1:3:w1", "b1:e1s3:3:w1", "b1:e1s4:3:w1"]
    (entry,) = store.history(limit=1)
    assert entry.source is not None
    assert entry.source["review"]["actor"] == AUTO_APPROVE_ACTOR


def test_a_dedup_consolidation_under_review_is_proposed_and_applies_on_approval(
    store: RedisSkillbookStore,
) -> None:
    keep, merged = seeded(store, "Carry the one", "Carry 1")
    store.review.set_policy(parse_policy("CONSOLIDATE=review"), actor=ALICE)
    book = StoreBackedSkillbook(store)
    batch = ConsolidationBatch(operations=[MergeOp(keep_id=keep, merge_ids=[merged])])
    with write_scope(WriteScope(key_prefix="dedup:1", source={"command": "skillbook dedup"})):
        report = book.apply_consolidation(batch)
    assert not report.changed
    assert contents(store) == ["Carry 1", "Carry the one"]
    (proposal,) = store.review.proposals()
    assert proposal.kind is ProposalKind.CONSOLIDATE
    store.review.approve(proposal.id, actor=ALICE)
    assert contents(store) == ["Carry the one"]
    (entry,) = store.history(limit=1)
    assert (entry.kind, entry.consolidation[0]["type"]) == (ChangeKind.REVIEW, "MERGE")


def test_a_cached_snapshot_is_brought_forward_through_review_entries_without_a_whole_read(
    store: RedisSkillbookStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    learn(store, UpdateBatch(operations=[add("Check the units"), tag(rule, helpful=1)]), key="k1")
    learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="k2")
    store.cached_snapshot()
    whole: list[Any] = []
    read_whole = store._read_whole_for_cache
    monkeypatch.setattr(store, "_read_whole_for_cache", lambda: whole.append(1) or read_whole())
    first, second = store.review.proposals()
    store.review.approve(first.id, actor=ALICE)
    store.review.reject(second.id, actor=ALICE)
    version, view = store.cached_snapshot()
    assert whole == []
    assert version == store.version()
    # Cached snapshots leave provenance out (workers serve and decide on skills, not their history).
    assert without_provenance(view.to_dict()) == without_provenance(store.snapshot()[1].to_dict())


def test_agreeing_proposals_stored_at_once_auto_approve_exactly_once(redis_client: redis.Redis) -> None:
    store = RedisSkillbookStore(redis_client, "book", max_attempts=100, snapshot_cache=SnapshotCache())
    proposers = 4
    store.review.set_policy(ReviewPolicy.everything("review", auto_approve_after=proposers), actor=ALICE)
    before = store.version()
    barrier = threading.Barrier(proposers)

    def propose(number: int) -> None:
        barrier.wait()
        learn(store, UpdateBatch(operations=[add("Check the units")]), key=f"b1:e1s{number}:3")

    with ThreadPoolExecutor(proposers) as pool:
        list(pool.map(propose, range(proposers)))
    assert store.version() == before + 1  # one auto-approval, not two, not none
    assert contents(store) == ["Check the units"]
    assert store.review.pending_count() == 0
    (approved,) = store.review.proposals(ProposalStatus.APPROVED)  # the agreeing writes merged into one
    assert approved.count == proposers


def test_rollback_and_diff_read_review_entries_like_any_other(store: RedisSkillbookStore) -> None:
    (rule,) = seeded(store, "Carry the one")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=ALICE)
    start = store.version()
    update = UpdateOperation(type="UPDATE", skill_id=rule, content="Carry the one, always")
    learn(store, UpdateBatch(operations=[update, add("Check the units")]), key="k1")
    learn(store, UpdateBatch(operations=[add("Always answer 42")]), key="k2")
    good, bad = store.review.proposals()
    store.review.approve(good.id, actor=ALICE)
    store.review.reject(bad.id, actor=ALICE)
    changed = store.diff(start, store.version())
    assert changed[rule][1]["content"] == "Carry the one, always"  # type: ignore[index]
    assert len(changed) == 2  # the rewrite and the added skill; the rejection changed nothing
    store.rollback(start)
    assert contents(store) == ["Carry the one"]
    assert [c.kind for c in store.history(limit=4)] == [
        ChangeKind.ROLLBACK,
        ChangeKind.REVIEW,
        ChangeKind.REVIEW,
        ChangeKind.REVIEW,
    ]
