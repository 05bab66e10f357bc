"""Forget on real workers, on Redis and on Redis Cluster: a user's marker is nowhere after, others' stay.

One user's traces carry a unique marker (in the input, so it also reaches the Reflector's
reasoning and the change log's evidence, and in their metadata); the fleet learns from them and
from other users' traces; ``forget`` of ``metadata.user_id=u1`` must leave the marker in no key
of any Redis the fleet uses (the store's and the broker's), archive the skill learned from u1
alone, keep the skill others taught too, and keep every other user's traces.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.erasure_selector import Selector, parse_subject
from ace_workers.distributed.store.errors import SamplesInFlightError
from ace_workers.distributed.store.review_policy import ReviewPolicy
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from ace_workers.operations import FleetClient, operator, principal_for_key
from ace_workers.operations.errors import AdminRoleRequiredError
from ace_workers.operations.forget import forget, forget_history
from tests.support.recipes import TEST_RECIPES
from tests.support.redis_scan import places_holding
from tests.support.servers import LocalCluster

TIMEOUT = 90
BOOK = "support"
OPERATOR = operator("user:dpo")
U1 = parse_subject("metadata.user_id=u1")


def trace(topic: str, value: str, user: str, note: str) -> dict[str, Any]:
    """A failed attempt at a simulated task: the Reflector learns ``topic``'s rule from it."""
    answers = {
        "flux": value + value,
        "zorb": value[::-1],
        "quill": str(int(value) * 2) if value.isdigit() else "",
    }
    return {
        "question": f"Solve the {topic} puzzle. Input: {value}",
        "answer": "no idea",
        "ground_truth": answers[topic],
        "feedback": "Incorrect.",
        "metadata": {"user_id": user, "note": note},
    }


@dataclass
class Fleet:
    """A fleet of real in-process workers, the Redis clients to scan, and a client of its state."""

    service: Service
    scanned: list[redis.Redis]
    client: FleetClient


@pytest.fixture
def fleet_settings() -> dict[str, Any]:
    """Settings a test adds to its fleet's (it parametrizes this: a slow LLM, a small claim check)."""
    return {}


@pytest.fixture(params=["server", "cluster"])
def fleet(
    request: pytest.FixtureRequest, redis_url: str, redis_client: redis.Redis, fleet_settings: dict[str, Any]
) -> Iterator[Fleet]:
    """Workers on the test Redis (``server``), or with the store on a Redis Cluster (``cluster``)."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    options: dict[str, Any] = {
        "queue_prefix": prefix,
        "sim_trust_threshold": 0,
        "recipes": TEST_RECIPES,
        **fleet_settings,
    }
    scanned = [redis_client]
    cluster = None
    if request.param == "cluster":
        local: LocalCluster = request.getfixturevalue("redis_cluster")
        cluster = local.client()
        cluster.flushall()
        options["store_url"] = local.url
        scanned.append(cluster)
    settings = WorkerSettings(redis_url=redis_url, **options)
    service = build_service(settings, redis_url=redis_url)
    client = FleetClient(settings, redis_url)
    try:
        yield Fleet(service, scanned, client)
    finally:
        client.close()
        service.close()
        if cluster is not None:
            cluster.flushall()
            cluster.close()


def marker() -> str:
    return "m" + uuid.uuid4().hex


def found(fleet: Fleet, text: str) -> list[str]:
    return [place for client in fleet.scanned for place in places_holding(client, text)]


def skill_of(fleet: Fleet, section: str) -> dict[str, Any]:
    store = fleet.client.store(BOOK)
    images = [store.read_skill(skill.id)[1] for skill in [*store.export().skills(), *store.archived()]]
    matching = [image for image in images if image is not None and image["section"] == section]
    assert len(matching) == 1, matching
    return matching[0]


def learn(fleet: Fleet, traces: list[dict[str, Any]]) -> None:
    status = fleet.service.producer.enqueue_traces(traces, BOOK).wait(timeout=TIMEOUT)
    assert (status.done, status.failed) == (len(traces), 0)


def test_forgetting_a_user_leaves_their_marker_in_no_key_and_archives_what_only_they_taught(
    fleet: Fleet,
) -> None:
    secret, other = marker(), marker()
    u1 = [trace("flux", secret, "u1", secret), trace("flux", secret + "x", "u1", secret)]
    u1.append(trace("zorb", "4821", "u1", secret))
    others = [trace("zorb", "3917", "u2", other), trace("quill", "212", "u2", other)]
    with local_workers(fleet.service):
        # Others first: u1's zorb lesson then restates a skill u2 taught (a TAG on it, not an ADD).
        learn(fleet, others)
        learn(fleet, u1)
        assert found(fleet, secret), "the marker must reach Redis before it can be erased"

        result = forget(fleet.client, OPERATOR, U1, derived_action="archive")
        again = forget(fleet.client, OPERATOR, U1, derived_action="archive")

    assert found(fleet, secret) == []
    assert found(fleet, other) != []  # u2's traces are kept (their items and records hold it)
    assert result.samples == 3
    assert result.counts["batch_items"] == 3
    assert result.counts["batch_records"] == 3
    assert result.counts["changelog"] >= 1
    assert result.counts["provenance"] >= 1
    flux, zorb = skill_of(fleet, "flux"), skill_of(fleet, "zorb")
    assert result.derived == {BOOK: [flux["id"]]}
    assert flux["status"] == "archived"
    assert zorb["status"] == "active"
    assert skill_of(fleet, "quill")["status"] == "active"
    assert again.nothing_matched
    history = forget_history(fleet.client, OPERATOR)
    assert [record["id"] for record in history] == [again.erasure_id, result.erasure_id]
    assert history[1]["counts"] == result.counts
    assert history[1]["selector"] == {"kind": "subject", "value": "u1", "path": "metadata.user_id"}


@pytest.mark.parametrize("fleet_settings", [{"sim_latency_seconds": 0.5}])
def test_samples_in_flight_are_erased_once_they_finish(fleet: Fleet) -> None:
    secret = marker()
    u1 = [trace("flux", secret, "u1", secret), trace("zorb", "5821", "u1", secret)]
    lines: list[str] = []
    with local_workers(fleet.service):
        handle = fleet.service.producer.enqueue_traces(u1, BOOK)
        assert fleet.client.batches.status(handle.batch_id).state.value == "running"

        with pytest.raises(SamplesInFlightError, match=handle.batch_id):
            forget(fleet.client, OPERATOR, U1, wait_seconds=0)
        assert forget_history(fleet.client, OPERATOR) == []  # refused: nothing erased, nothing recorded

        result = forget(fleet.client, OPERATOR, U1, wait_seconds=TIMEOUT, say=lines.append)

        assert handle.wait(timeout=TIMEOUT).done == 2
    assert any(line.startswith("waiting for 2 matched samples in flight") for line in lines)
    assert result.samples == 2
    assert found(fleet, secret) == []


@pytest.mark.parametrize("fleet_settings", [{"claim_check_bytes": 64}])
def test_claimed_payloads_review_proposals_and_the_inbox_lose_the_marker_too(fleet: Fleet) -> None:
    secret, other = marker(), marker()
    store = fleet.client.store(BOOK)
    store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
    u1 = [trace("flux", secret, "u1", secret), trace("zorb", secret + "z", "u1", secret)]
    with local_workers(fleet.service):
        learn(fleet, [*u1, trace("quill", "212", "u2", other)])
    fleet.service.producer.append_to_inbox([trace("flux", secret + "i", "u1", secret)], BOOK)
    assert any(":claim:" in place for place in found(fleet, secret))  # the payloads were claim-checked
    pending = len(store.review.proposals())

    listed = forget(fleet.client, OPERATOR, U1, dry_run=True)
    result = forget(fleet.client, OPERATOR, U1, derived_action="archive")

    assert found(fleet, secret) == []
    assert found(fleet, other) != []
    assert result.counts["claims"] >= 2
    assert result.counts["proposals"] == 2
    assert result.counts["inbox"] == 1
    # u1's two proposals were learned from u1 alone: rejected; u2's stays pending.
    assert len(result.derived_proposals[BOOK]) == 2
    assert result.derived_proposals == listed.derived_proposals
    left = store.review.proposals()
    assert len(left) == pending - 2
    assert {p.id for p in left}.isdisjoint(result.derived_proposals[BOOK])


@pytest.fixture
def tenants(fleet: Fleet) -> dict[str, str]:
    """Tenant alpha owns skillbook ``support``, beta owns ``beta-*``: a secret for each role asked."""
    registry = TenantRegistry(fleet.client.redis, prefix=fleet.client.prefix)
    registry.add(Tenant("alpha", skillbooks=(BOOK,)))
    registry.add(Tenant("beta", prefixes=("beta-",)))
    keys = ApiKeys(fleet.client.redis, prefix=fleet.client.prefix)
    return {
        "alpha-admin": keys.create("alpha", "admin")[1],
        "alpha-learn": keys.create("alpha", "learn")[1],
        "beta-admin": keys.create("beta", "admin")[1],
    }


def test_a_tenant_admin_forgets_within_its_tenant_and_a_lower_role_is_refused(
    fleet: Fleet, tenants: dict[str, str]
) -> None:
    secret = marker()
    with local_workers(fleet.service):
        learn(fleet, [trace("flux", secret, "u1", secret)])
    keys = fleet.client.api_keys

    with pytest.raises(AdminRoleRequiredError, match="role 'learn'"):
        forget(fleet.client, principal_for_key(keys, tenants["alpha-learn"]), U1)
    other_tenant = forget(fleet.client, principal_for_key(keys, tenants["beta-admin"]), U1)
    assert other_tenant.nothing_matched
    assert found(fleet, secret) != []

    own = forget(fleet.client, principal_for_key(keys, tenants["alpha-admin"]), U1)
    assert own.samples == 1
    assert found(fleet, secret) == []
    beta_history = forget_history(fleet.client, principal_for_key(keys, tenants["beta-admin"]))
    assert [record["id"] for record in beta_history] == [other_tenant.erasure_id]


def test_a_dry_run_lists_what_matches_and_erases_nothing(fleet: Fleet) -> None:
    secret = marker()
    with local_workers(fleet.service):
        learn(fleet, [trace("flux", secret, "u1", secret)])
    before = found(fleet, secret)

    result = forget(fleet.client, OPERATOR, Selector("subject", "u1", ("metadata", "user_id")), dry_run=True)

    assert result.samples == 1
    assert result.counts["batch_items"] == 1
    assert result.derived == {BOOK: [skill_of(fleet, "flux")["id"]]}
    assert found(fleet, secret) == before
    assert skill_of(fleet, "flux")["status"] == "active"
    assert forget_history(fleet.client, OPERATOR) == []


def test_a_reader_holding_a_snapshot_from_before_serves_the_skills_without_the_marker(fleet: Fleet) -> None:
    secret = marker()
    with local_workers(fleet.service):
        learn(fleet, [trace("flux", secret, "u1", secret), trace("quill", "212", "u2", "kept")])
    reader = fleet.client.store(BOOK)  # a long-lived reader (a console, a learn worker)
    _, before = reader.cached_snapshot()
    assert secret in json.dumps(before.to_dict()), "the skill's evidence must hold the marker first"

    forget(fleet.client, OPERATOR, U1)

    _, after = reader.cached_snapshot()
    assert secret not in json.dumps(after.to_dict())
    assert len(after.to_dict()["skills"]) == len(before.to_dict()["skills"])


@pytest.mark.parametrize("fleet_settings", [{"redact": "default,keep:metadata.user_id"}])
def test_a_subject_kept_from_redaction_is_forgotten_by_the_value_sent(fleet: Fleet) -> None:
    address = f"{marker()}@example.com"
    with local_workers(fleet.service):
        learn(fleet, [trace("flux", "77", address, "note"), trace("quill", "212", "u2", "kept")])
    subject = parse_subject(f"metadata.user_id={address}")

    result = forget(fleet.client, OPERATOR, subject)

    assert result.samples == 1
    # The erasure record names whom it erased (its selector), as an accountability log does.
    assert [
        place for place in found(fleet, address) if not place.startswith(f"b'{fleet.client.prefix}:erasures'")
    ] == []
