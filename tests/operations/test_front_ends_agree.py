"""The CLI, the console and MCP answer the same write the same way: one operation, authorized once.

A read key of the skillbook's tenant is refused approving a proposal, moving a label and pinning
a skill on every front end (CLI exit 4, HTTP 403, MCP's forbidden code), with nothing changed in
Redis; a review key approves on every front end. Real Redis, real HTTP, the real command.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis

from ace_workers.core import UpdateBatch, UpdateOperation
from ace_workers.distributed.service import Service
from ace_workers.distributed.store import StoreBackedSkillbook, WriteScope, write_scope
from ace_workers.distributed.store.proposals import ProposalStatus
from ace_workers.distributed.store.review_policy import ReviewPolicy
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from ace_workers.operations.outcomes import FORBIDDEN
from tests.support.cli import run_console_script
from tests.support.console import running_console
from tests.support.mcp import call, connect_http, fleet_env, http_server_in_process
from tests.support.workers import build_test_service

SKILLBOOK = "shared"  # the skillbook fleet_env's MCP server serves


@dataclass(frozen=True)
class Fleet:
    """Skillbook "shared" of tenant alpha: one skill, label prod at version 1, one pending proposal."""

    service: Service
    store: RedisSkillbookStore
    keys: ApiKeys
    skill_id: str
    proposal_id: str

    def state(self) -> tuple[object, ...]:
        """What any of the writes would change."""
        skill = self.store.export().get_skill(self.skill_id)
        assert skill is not None
        return (
            self.store.version(),
            self.store.labels.all(),
            self.store.review.get(self.proposal_id).status,
            skill.pinned,
        )


@pytest.fixture
def fleet(redis_client: redis.Redis, redis_url: str) -> Iterator[Fleet]:
    service = build_test_service(redis_url)
    try:
        runtime = service.runtime
        prefix = runtime.settings.queue_prefix
        TenantRegistry(runtime.redis, prefix=prefix).add(Tenant("alpha", skillbooks=(SKILLBOOK,)))
        runtime.tenants.forget()
        store = runtime.store(SKILLBOOK)
        (skill_id,) = store.apply(
            UpdateBatch(operations=[UpdateOperation(type="ADD", section="math", content="Carry the one")])
        ).report.added
        store.labels.set("prod", 1, actor="user:lead")
        store.review.set_policy(ReviewPolicy.everything("review"), actor="user:lead")
        scope = WriteScope(key_prefix="b1:e1s1:3", source={"batch": "b1", "sample": 1})
        with write_scope(scope):
            StoreBackedSkillbook(store).apply_update(
                UpdateBatch(
                    reasoning="a lesson",
                    operations=[UpdateOperation(type="ADD", section="units", content="Check units")],
                )
            )
        (proposal,) = store.review.proposals()
        yield Fleet(service, store, ApiKeys(runtime.redis, prefix=prefix), skill_id, proposal.id)
    finally:
        service.close()


# -- each front end attempts one write with a key; returns how it answered (code, or 0: done) ----------


def by_cli(
    fleet: Fleet, write: str, secret: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> int:
    for name in list(os.environ):
        if name.startswith("ACE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ACE_REDIS_URL", fleet.service.runtime.settings.redis_url or "")
    monkeypatch.setenv("ACE_QUEUE_PREFIX", fleet.service.runtime.settings.queue_prefix)
    argv = {
        "approve": ["skillbook", "review", "approve", SKILLBOOK, fleet.proposal_id],
        "label": ["skillbook", "label", "set", SKILLBOOK, "prod", "2"],
        "pin": ["skillbook", "pin", SKILLBOOK, fleet.skill_id],
    }[write]
    ran = run_console_script(monkeypatch, capsys, *argv, "--api-key", secret)
    if ran.code == FORBIDDEN.exit_code:
        assert "has role 'read'" in ran.err
    return ran.code


def by_console(fleet: Fleet, write: str, secret: str, *_: object) -> int:
    path, body = {
        "approve": (f"/api/skillbooks/{SKILLBOOK}/review/{fleet.proposal_id}/approve", {}),
        "label": (f"/api/skillbooks/{SKILLBOOK}/labels/prod", {"to": "2"}),
        "pin": (f"/api/skillbooks/{SKILLBOOK}/skills/{fleet.skill_id}/pin", {}),
    }[write]
    with running_console(fleet.service) as console, console.client(token=secret) as client:
        response = client.post(path, json=body)
    if response.status_code == FORBIDDEN.http_status:
        assert response.json()["error"] == FORBIDDEN.kind
        return response.status_code
    assert response.status_code == 200, response.text
    return 0


def by_mcp(fleet: Fleet, write: str, secret: str, *_: object) -> int:
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "approve": ("ace.review.approve", {"proposal_id": fleet.proposal_id}),
        "label": ("ace.label.set", {"label": "prod", "version": 2}),
        "pin": ("ace.skill.change", {"change": "pin", "skill_ids": [fleet.skill_id]}),
    }
    tool, arguments = calls[write]
    service = fleet.service
    env = fleet_env(service, service.runtime.settings.redis_url or "", Path("/nonexistent"))
    answered: list[int] = []

    async def scenario() -> None:
        from mcp.shared.exceptions import MCPError  # the SDK loads when a test connects

        with http_server_in_process(env) as url:
            async with connect_http(url, secret) as client:
                try:
                    await call(client, tool, arguments)
                except MCPError as error:
                    assert error.data["kind"] == FORBIDDEN.kind
                    answered.append(error.code)
                else:
                    answered.append(0)

    anyio.run(scenario)
    return answered[0]


FRONT_ENDS: dict[str, Callable[..., int]] = {"cli": by_cli, "console": by_console, "mcp": by_mcp}
REFUSED = {"cli": FORBIDDEN.exit_code, "console": FORBIDDEN.http_status, "mcp": FORBIDDEN.mcp_code}


@pytest.mark.parametrize("write", ["approve", "label", "pin"])
@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_a_read_key_is_refused_the_same_write_by_every_front_end_and_nothing_changes(
    front_end: str,
    write: str,
    fleet: Fleet,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, secret = fleet.keys.create("alpha", "read")
    before = fleet.state()
    assert FRONT_ENDS[front_end](fleet, write, secret, monkeypatch, capsys) == REFUSED[front_end]
    assert fleet.state() == before


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_a_review_key_approves_on_every_front_end(
    front_end: str, fleet: Fleet, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key, secret = fleet.keys.create("alpha", "review")
    version = fleet.store.version()
    assert FRONT_ENDS[front_end](fleet, "approve", secret, monkeypatch, capsys) == 0
    approved = fleet.store.review.get(fleet.proposal_id)
    assert approved.status is ProposalStatus.APPROVED
    assert approved.decision is not None
    assert approved.decision.actor == f"key:{key.id}"
    assert fleet.store.version() == version + 1
