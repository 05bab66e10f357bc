"""Review before apply on real in-process workers: a batch learned under review proposes, never applies."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from ace_workers.core.environments import Sample
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.proposals import ProposalStatus
from ace_workers.distributed.store.review_policy import ReviewPolicy, parse_policy
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.distributed.worker.tasks import run_step
from ace_workers.sim import failure_traces
from tests.support.docs import code_blocks
from tests.support.workers import running_service

REVIEWER = "user:reviewer"


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """In-process workers for all three queues on the test Redis (flushed around the test)."""
    with running_service(redis_url) as built:
        yield built


def test_a_batch_learned_in_review_mode_proposes_and_approving_one_applies_it(service: Service) -> None:
    store = service.runtime.store("support")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=REVIEWER)
    before = store.version()
    handle = service.producer.enqueue_traces(failure_traces(6, topics=3), "support")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (6, 0)
    # Learning went on for every sample; the skillbook did not change.
    assert store.version() == before
    assert len(store.export()) == 0
    # Two samples of each of three topics: one proposal per topic, counting both samples.
    proposals = store.review.proposals()
    assert len(proposals) == 3
    assert [p.count for p in proposals] == [2, 2, 2]
    occurrences = [o for p in proposals for o in p.occurrences]
    assert {o.source["batch"] for o in occurrences} == {handle.batch_id}
    assert sorted(o.source["sample"] for o in occurrences) == [1, 2, 3, 4, 5, 6]
    assert all(p.reasoning for p in proposals)
    assert all(op["type"] == "ADD" for p in proposals for op in p.operations)

    first, second = proposals[0], proposals[1]
    store.review.approve(first.id, actor=REVIEWER, note="a real rule")
    assert store.version() == before + 1
    assert {s.content for s in store.export().skills()} == {op["content"] for op in first.operations}
    store.review.reject(second.id, actor=REVIEWER, note="not this one")
    assert store.version() == before + 2
    assert store.review.pending_count() == 1
    kinds = [(c.kind, c.source["review"]["decision"]) for c in store.history(limit=2) if c.source]
    assert kinds == [(ChangeKind.REVIEW, "rejected"), (ChangeKind.REVIEW, "approved")]


def test_a_redelivered_apply_step_in_review_mode_stores_no_second_proposal(service: Service) -> None:
    store = service.runtime.store("once")
    store.review.set_policy(ReviewPolicy.everything("review"), actor=REVIEWER)
    handle = service.producer.enqueue_traces(failure_traces(1), "once")
    handle.wait(timeout=60)
    (proposal,) = store.review.proposals()
    version = store.version()
    _, routes = service.runtime.pipeline("trace_analyser", "once")
    apply_index = next(r.index for r in routes if r.name == "ApplyStep")
    (result,) = handle.results()
    assert result.output is not None
    payload = context_to_payload(result.output, claims=service.runtime.claims)
    kwargs = {
        "recipe": "trace_analyser",
        "skillbook": "once",
        "index": apply_index,
        "batch_id": handle.batch_id,
        "epoch": 1,
        "sample_index": 1,
    }
    run_step(service.dispatcher, payload, **kwargs)  # the same write, delivered again
    assert [p.id for p in store.review.proposals()] == [proposal.id]
    assert store.version() == version
    # Approved, then delivered once more: it stays approved and applies nothing again.
    store.review.approve(proposal.id, actor=REVIEWER)
    skills = len(store.export())
    run_step(service.dispatcher, payload, **kwargs)
    assert store.review.get(proposal.id).status is ProposalStatus.APPROVED
    assert len(store.export()) == skills
    assert store.review.pending_count() == 0


def test_with_adds_reviewed_and_tags_auto_workers_tag_at_once_and_propose_the_adds(service: Service) -> None:
    store = service.runtime.store("rules")
    store.review.set_policy(parse_policy("ADD=review,TAG=auto"), actor=REVIEWER)
    first = service.producer.enqueue_traces(failure_traces(3, topics=3), "rules")
    assert first.wait(timeout=60).done == 3
    proposals = store.review.proposals()
    assert [op["type"] for p in proposals for op in p.operations] == ["ADD"] * 3
    assert len(store.export()) == 0
    for proposal in proposals:
        store.review.approve(proposal.id, actor=REVIEWER)
    approved = store.version()
    # The same rules met again: the SkillManager tags the skills, and TAGs apply at once.
    second = service.producer.enqueue_traces(failure_traces(3, topics=3, seed=5), "rules")
    assert second.wait(timeout=60).done == 3
    assert store.review.pending_count() == 0
    assert store.version() == approved + 3
    assert [s.helpful for s in store.export().skills()] == [1, 1, 1]
    assert {c.kind for c in store.history(limit=3)} == {ChangeKind.APPLY}


def steering_tasks() -> list[Sample]:
    """The tasks of the steering page's worked example (docs/steering.md), as it writes them."""
    (script,) = code_blocks("docs/steering.md", "## A worked example", language="sh")
    lines = script.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0].splitlines()
    return [Sample(question=t["question"], ground_truth=t["ground_truth"]) for t in map(json.loads, lines)]


def test_the_steering_example_leaves_one_pending_proposal_per_idea(service: Service) -> None:
    store = service.runtime.store("support")
    store.review.set_policy(parse_policy("ADD=review,UPDATE=review,REMOVE=review,TAG=auto"), actor=REVIEWER)
    tasks = steering_tasks()
    assert service.producer.enqueue_samples(tasks, "support").wait(timeout=120).failed == 0
    first = store.review.proposals()  # three samples of each puzzle: one proposal each
    assert len(first) == 2
    (zorb,) = [p for p in first if p.touches_section("zorb")]
    (flux,) = [p for p in first if p.touches_section("flux")]
    assert (zorb.count, flux.count) == (3, 3)
    store.review.approve(zorb.id, actor=REVIEWER, note="states the zorb rule")
    store.review.reject(flux.id, actor=REVIEWER, note="not yet")
    assert service.producer.enqueue_samples(tasks, "support", epochs=3).wait(timeout=180).failed == 0
    # The flux rule, proposed again by each of its nine samples, waits once; zorb's, active, not at all.
    (pending,) = store.review.proposals()
    assert pending.touches_section("flux")
    assert pending.count == 9
    assert pending.id != flux.id  # decided proposals stay decided
    assert store.review.restated(pending) == []
    assert [p.id for p in store.review.proposals(ProposalStatus.APPROVED)] == [zorb.id]
