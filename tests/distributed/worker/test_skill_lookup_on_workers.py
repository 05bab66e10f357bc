"""The SkillManager's lookup on real in-process workers and Redis: it tags what exists, joins what waits."""

from __future__ import annotations

import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.review_policy import ReviewPolicy
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.distributed.tenancy.tenants import ALL_MODELS, Budget, Tenant, TenantRegistry
from ace_workers.sim import failure_traces
from ace_workers.sim.tasks import TOPICS
from tests.support.lookup import ZORB_RULE, ZORB_RULE_REWORDED, crowded_skillbook
from tests.support.workers import running_service

REVIEWER = "user:reviewer"
TIMEOUT = 120


def learn_one_zorb_failure(service: Service, skillbook: str) -> None:
    handle = service.producer.enqueue_traces(failure_traces(1, topics=1), skillbook)
    status = handle.wait(timeout=TIMEOUT)
    assert (status.done, status.failed) == (1, 0)


def zorb_rule_skills(store: RedisSkillbookStore) -> list[tuple[str, int]]:
    """(id, helpful votes) of every skill stating the zorb rule in so many words."""
    return [(s.id, s.helpful) for s in store.export().skills() if "reverse the digits" in s.content]


@pytest.mark.parametrize(("lookup", "tagged"), [("similar", True), ("off", False)])
def test_at_10000_skills_a_worker_tags_the_rule_it_looked_up_and_adds_it_again_without(
    redis_client: redis.Redis, redis_url: str, lookup: str, tagged: bool
) -> None:
    book, rule_id = crowded_skillbook(10_000)
    with running_service(redis_url, skill_lookup=lookup) as service:
        store = service.runtime.store("crowded")
        store.import_skillbook(book)
        learn_one_zorb_failure(service, "crowded")
        skills = zorb_rule_skills(store)
        if tagged:
            assert skills == [(rule_id, 1)]
            assert store.active_skills() == 10_000
        else:
            assert skills[0] == (rule_id, 0)
            assert len(skills) == 2  # the rule, added a second time
            assert store.active_skills() == 10_001


@pytest.mark.parametrize(("lookup", "proposals"), [("similar", 1), ("off", 2)])
def test_a_worker_repeats_a_pending_proposal_stating_its_learning_instead_of_rewording_it(
    redis_client: redis.Redis, redis_url: str, lookup: str, proposals: int
) -> None:
    with running_service(redis_url, skill_lookup=lookup) as service:
        store = service.runtime.store("reviewed")
        store.review.set_policy(ReviewPolicy.everything("review"), actor=REVIEWER)
        seeded = UpdateBatch(
            reasoning="seeded",
            operations=[UpdateOperation(type="ADD", section="zorb", content=ZORB_RULE_REWORDED)],
        )
        store.review.propose_update(seeded, idempotency_key="seed")
        learn_one_zorb_failure(service, "reviewed")
        pending = store.review.proposals()
        assert len(pending) == proposals
        if proposals == 1:
            assert pending[0].count == 2  # the worker's write joined the seeded proposal
        else:
            assert {op["content"] for p in pending for op in p.operations} == {ZORB_RULE_REWORDED, ZORB_RULE}


@pytest.mark.parametrize(("lookup", "requests"), [("tools", 3), ("similar", 2)])
def test_tool_turns_are_counted_against_the_tenant_like_any_llm_call(
    redis_client: redis.Redis, redis_url: str, lookup: str, requests: int
) -> None:
    book, rule_id = crowded_skillbook(1_000)
    with running_service(redis_url, skill_lookup=lookup, sim_cost_per_1k_tokens=1.0) as service:
        runtime = service.runtime
        TenantRegistry(runtime.redis, prefix=runtime.settings.queue_prefix).add(
            # A budget, so the limiter counts the tenant's every call (none is near it).
            Tenant("team-a", skillbooks=("paid",), budgets=(Budget(ALL_MODELS, cost_per_day=1000.0),))
        )
        store = runtime.store("paid")
        store.import_skillbook(book)
        learn_one_zorb_failure(service, "paid")
        assert zorb_rule_skills(store) == [(rule_id, 1)]
        usage = runtime.limiter.usage("team-a").window(ALL_MODELS, "day")
        assert usage is not None
        # One Reflector call, and the SkillManager's: one, or with tools a search turn and an answer.
        assert usage.requests == requests
        assert usage.cost > 0


@pytest.mark.parametrize(("lookup", "once"), [("similar", True), ("off", False)])
def test_learn_slots_deciding_side_by_side_add_a_lesson_once_however_each_words_it(
    redis_client: redis.Redis, redis_url: str, lookup: str, once: bool
) -> None:
    zorb = TOPICS[0]
    # Four slots, each call 0.2 s: the four first samples' SkillManagers decide at the same time.
    settings = {"skill_lookup": lookup, "sim_paraphrase": True, "sim_latency_seconds": 0.2}
    with running_service(redis_url, learn_threads=4, **settings) as service:
        handle = service.producer.enqueue_traces(failure_traces(8, topics=[zorb]), "side-by-side")
        status = handle.wait(timeout=TIMEOUT)
        assert (status.done, status.failed) == (8, 0)
        stating = [
            s.content
            for s in service.runtime.store("side-by-side").export().skills()
            if zorb.is_stated_by(s.content)
        ]
    if once:
        assert len(stating) == 1, stating
    else:
        assert len(stating) >= 2, stating  # each slot added the lesson in its own words
