"""The MCP review tools on the fleet back end: list, approve and reject what real workers proposed."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.proposals import ProposalStatus
from ace_workers.distributed.store.review_policy import ReviewPolicy
from ace_workers.sim import failure_traces
from tests.support.mcp import CLIENTS, call, fleet_env, http_client, make_key, refused, server_env
from tests.support.workers import running_service

pytestmark = pytest.mark.slow


def test_review_tools_list_approve_and_reject_the_fleet_skillbooks_proposals(
    redis_url: str, tmp_path: Path
) -> None:
    with running_service(redis_url) as service:
        store = service.runtime.store("shared")
        store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
        status = service.producer.enqueue_traces(failure_traces(3, topics=3), "shared").wait(timeout=60)
        assert (status.done, status.failed) == (3, 0)
        before = store.version()
        env = fleet_env(service, redis_url, tmp_path)
        key, secret = make_key(env)
        # Decisions over HTTP are recorded as the key that made them.
        key_actor = f"key:{key.id}"

        async def scenario() -> dict[str, str]:
            async with http_client(env, secret) as client:
                listed = await call(client, "ace.review.list", {})
                assert listed["skillbook"] == "shared"
                assert listed["pending"] == 3
                first, second, _ = (p["id"] for p in listed["proposals"])
                assert all(p["operations"] and p["source"]["batch"] for p in listed["proposals"])
                approved = await call(client, "ace.review.approve", {"proposal_id": first, "note": "sound"})
                assert (approved["status"], approved["actor"], approved["note"]) == (
                    "approved",
                    key_actor,
                    "sound",
                )
                assert approved["version"] == before + 1
                rejected = await call(client, "ace.review.reject", {"proposal_id": second})
                assert (rejected["status"], rejected["version"]) == ("rejected", before + 2)
                again = await refused(client, "ace.review.approve", {"proposal_id": second})
                assert again.data["kind"] == "conflict"  # as every front end answers a decided proposal
                assert "was rejected already" in str(again)
                unknown = await refused(client, "ace.review.reject", {"proposal_id": "p-nothere"})
                assert unknown.data["kind"] == "not_found"
                left = await call(client, "ace.review.list", {"status": "all"})
                assert [p["status"] for p in left["proposals"]] == ["approved", "rejected", "pending"]
                return {"first": first, "second": second}

        ids = anyio.run(scenario)
        assert store.version() == before + 2
        assert store.review.get(ids["first"]).status is ProposalStatus.APPROVED
        assert len(store.export()) == 1
        entries = [c for c in store.history(limit=2) if c.kind is ChangeKind.REVIEW and c.source]
        assert [c.source["review"]["actor"] for c in entries if c.source] == [key_actor, key_actor]


def test_a_read_only_server_lists_proposals_but_decides_none(redis_url: str, tmp_path: Path) -> None:
    with running_service(redis_url) as service:
        store = service.runtime.store("shared")
        store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
        service.producer.enqueue_traces(failure_traces(1), "shared").wait(timeout=60)
        (proposal,) = store.review.proposals()
        env = fleet_env(service, redis_url, tmp_path, ACE_MCP_READ_ONLY="true")

        async def scenario() -> None:
            async with CLIENTS["http"](env) as client:
                listed = await call(client, "ace.review.list", {})
                assert [p["id"] for p in listed["proposals"]] == [proposal.id]
                error = await refused(client, "ace.review.approve", {"proposal_id": proposal.id})
                assert error.data["kind"] == "read_only"

        anyio.run(scenario)
        assert store.review.get(proposal.id).status is ProposalStatus.PENDING


def test_the_local_back_end_refuses_the_review_tools_naming_the_fleet(tmp_path: Path) -> None:
    env = server_env(tmp_path)

    async def scenario() -> None:
        async with CLIENTS["http"](env) as client:
            error = await refused(client, "ace.review.list", {})
            assert error.data["kind"] == "invalid_request"
            assert "fleet back end" in str(error)

    anyio.run(scenario)


def test_the_review_tools_decide_several_proposals_each_on_its_own(redis_url: str, tmp_path: Path) -> None:
    with running_service(redis_url) as service:
        store = service.runtime.store("shared")
        store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
        status = service.producer.enqueue_traces(failure_traces(3, topics=3), "shared").wait(timeout=60)
        assert (status.done, status.failed) == (3, 0)
        first, second, third = (p.id for p in store.review.proposals())
        before = store.version()
        env = fleet_env(service, redis_url, tmp_path)
        _, secret = make_key(env)

        async def scenario() -> None:
            async with http_client(env, secret) as client:
                rejected = await call(client, "ace.review.reject", {"proposal_ids": [first, second]})
                assert [(d["proposal_id"], d["status"]) for d in rejected["decisions"]] == [
                    (first, "rejected"),
                    (second, "rejected"),
                ]
                mixed = await call(client, "ace.review.approve", {"proposal_ids": [first, third]})
                refusal, approval = mixed["decisions"]
                assert (refusal["status"], refusal["error"]) == ("refused", "conflict")
                assert "was rejected already" in refusal["message"]
                assert (approval["proposal_id"], approval["status"]) == (third, "approved")
                neither = await refused(client, "ace.review.approve", {})
                assert "give proposal_id or proposal_ids" in str(neither)

        anyio.run(scenario)
        assert store.version() == before + 3
        assert store.review.pending_count() == 0
