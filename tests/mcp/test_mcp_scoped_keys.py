"""Scoped API keys over MCP HTTP: a key reaches its tenant's skillbook with its role, nothing else."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from ace_workers.distributed.service import Service
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from ace_workers.mcp.handlers import TOOL_ROLES
from ace_workers.mcp.server import TOOLS
from tests.support.mcp import (
    INITIALIZE,
    call,
    connect_http,
    fleet_env,
    http_server_in_process,
    make_key,
    refused,
)
from tests.support.operations import add, batch
from tests.support.workers import running_service

pytestmark = pytest.mark.slow

LEARN = {"session_id": "s", "samples": [{"question": "What is 2+2?", "ground_truth": "4"}], "wait": False}


def tenants_and_keys(service: Service) -> ApiKeys:
    """Tenant "alpha" owns the served skillbook "shared" (one skill), "beta" owns "beta-notes"."""
    runtime = service.runtime
    registry = TenantRegistry(runtime.redis, prefix=runtime.settings.queue_prefix)
    registry.add(Tenant("alpha", skillbooks=("shared",), prefixes=("alpha-",)))
    registry.add(Tenant("beta", prefixes=("beta-",)))
    for name in ("shared", "alpha-docs", "beta-notes"):
        runtime.store(name).apply(batch(add(f"A skill of {name}.", "general")))
    return ApiKeys(runtime.redis, prefix=runtime.settings.queue_prefix)


def test_every_tool_has_the_role_it_needs() -> None:
    assert set(TOOL_ROLES) == set(TOOLS)


def test_a_key_of_another_tenant_is_refused_and_its_own_tenants_key_reads(
    redis_url: str, tmp_path: Path
) -> None:
    with running_service(redis_url) as service:
        keys = tenants_and_keys(service)
        _, alpha = keys.create("alpha", "read")
        beta_key, beta = keys.create("beta", "admin")
        env = fleet_env(service, redis_url, tmp_path)
        _, operator = make_key(env)  # fleet-wide: every tenant

        async def scenario() -> None:
            with http_server_in_process(env) as url:
                async with connect_http(url, beta) as client:
                    error = await refused(client, "ace.skillbook.get", {"session_id": "s"})
                    assert error.data["kind"] == "forbidden"
                    assert f"key '{beta_key.id}' of tenant 'beta'" in error.message
                    assert "skillbook 'shared': tenant 'alpha' owns it" in error.message
                    error = await refused(client, "ace.learn.sample", LEARN)
                    assert error.data["kind"] == "forbidden"
                    listed = await call(client, "ace.skillbook.list", {})
                    assert (listed["tenant"], listed["skillbooks"]) == ("beta", ["beta-notes"])
                async with connect_http(url, alpha) as client:
                    got = await call(client, "ace.skillbook.get", {"session_id": "s"})
                    assert (got["skillbook"], got["stats"]["skills"]) == ("shared", 1)
                    listed = await call(client, "ace.skillbook.list", {})
                    assert listed["skillbooks"] == ["alpha-docs", "shared"]
                async with connect_http(url, operator) as client:  # a fleet-wide key: every tenant
                    listed = await call(client, "ace.skillbook.list", {})
                    assert listed["tenant"] == "*"
                    assert listed["skillbooks"] == ["alpha-docs", "beta-notes", "shared"]

        anyio.run(scenario)
        assert service.runtime.batches.running() == []  # beta's learning was refused before sending


def test_a_read_key_is_refused_for_learning_and_a_learn_key_learns(redis_url: str, tmp_path: Path) -> None:
    with running_service(redis_url) as service:
        keys = tenants_and_keys(service)
        reader_key, reader = keys.create("alpha", "read")
        _learner_key, learner = keys.create("alpha", "learn")
        env = fleet_env(service, redis_url, tmp_path)

        async def scenario() -> str:
            with http_server_in_process(env) as url:
                async with connect_http(url, reader) as client:
                    error = await refused(client, "ace.learn.sample", LEARN)
                    assert error.data["kind"] == "forbidden"
                    assert f"key '{reader_key.id}' of tenant 'alpha' has role 'read'" in error.message
                    assert "this needs role 'learn' on skillbook 'shared'" in error.message
                    error = await refused(client, "ace.review.approve", {"proposal_id": "p1"})
                    assert "this needs role 'review'" in error.message
                async with connect_http(url, learner) as client:
                    learned = await call(client, "ace.learn.sample", LEARN)
                    error = await refused(client, "ace.skillbook.load", {"session_id": "s", "path": "x.json"})
                    assert "this needs role 'admin'" in error.message
                    return str(learned["batch_id"])

        batch_id = anyio.run(scenario)
        assert service.runtime.batches.status(batch_id).tenant == "alpha"


def test_a_revoked_key_gets_no_connection(redis_url: str, tmp_path: Path) -> None:
    with running_service(redis_url) as service:
        keys = tenants_and_keys(service)
        record, secret = keys.create("alpha", "admin")
        env = fleet_env(service, redis_url, tmp_path)
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        with http_server_in_process(env) as url:
            before = httpx.post(
                url, json=INITIALIZE, headers={**headers, "Authorization": f"Bearer {secret}"}
            )
            assert before.status_code == 200
            assert keys.revoke(record.id)
            after = httpx.post(url, json=INITIALIZE, headers={**headers, "Authorization": f"Bearer {secret}"})
            assert after.status_code == 401


def test_save_needs_learn_and_creates_no_folder_nor_replaces_a_file_unless_told(
    redis_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "skillbooks"
    folder.mkdir()
    theirs = folder / "theirs.json"
    theirs.write_text('{"skills": {"s1": {"content": "kept"}}}')
    with running_service(redis_url) as service:
        keys = tenants_and_keys(service)
        reader_key, reader = keys.create("alpha", "read")
        _, learner = keys.create("alpha", "learn")
        env = fleet_env(service, redis_url, folder)

        async def scenario() -> None:
            with http_server_in_process(env) as url:
                async with connect_http(url, reader) as client:
                    error = await refused(
                        client, "ace.skillbook.save", {"session_id": "s", "path": "mine.json"}
                    )
                    assert error.data["kind"] == "forbidden"
                    assert f"key '{reader_key.id}' of tenant 'alpha' has role 'read'" in error.message
                    assert "this needs role 'learn'" in error.message
                async with connect_http(url, learner) as client:
                    error = await refused(
                        client, "ace.skillbook.save", {"session_id": "s", "path": "theirs.json"}
                    )
                    assert (error.code, error.data["kind"]) == (-32003, "file_exists")
                    assert "'theirs.json' exists already" in error.message
                    error = await refused(
                        client, "ace.skillbook.save", {"session_id": "s", "path": "new/deeper/x.json"}
                    )
                    assert error.data["kind"] == "path_not_allowed"
                    assert "creates no folders" in error.message
                    saved = await call(client, "ace.skillbook.save", {"session_id": "s", "path": "mine.json"})
                    assert saved["saved_skill_count"] == 1
                    error = await refused(
                        client, "ace.skillbook.save", {"session_id": "s", "path": "mine.json"}
                    )
                    assert error.data["kind"] == "file_exists"  # a second save is told too
                    replaced = await call(
                        client,
                        "ace.skillbook.save",
                        {"session_id": "s", "path": "theirs.json", "overwrite": True},
                    )
                    assert replaced["saved_skill_count"] == 1

        anyio.run(scenario)
    assert sorted(path.name for path in folder.iterdir()) == ["mine.json", "theirs.json"]
    assert not (folder / "new").exists()
    assert "A skill of shared." in theirs.read_text()  # replaced only when told
