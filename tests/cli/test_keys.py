"""``key create|list|revoke``: the secret shown once, kept hashed, listed without it, revoked."""

from __future__ import annotations

import json

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from tests.support.cli import said
from tests.support.schema0 import stamp_current_schema

PREFIX = "clikeys"


@pytest.fixture
def keys(clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str) -> ApiKeys:
    """The fleet's keys under PREFIX, tenant "acme" added, the CLI pointed at them."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    stamp_current_schema(redis_client, PREFIX)  # as this version's first process did
    TenantRegistry(redis_client, prefix=PREFIX).add(Tenant("acme", prefixes=("acme-",)))
    return ApiKeys(redis_client, prefix=PREFIX)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["key", *args])
    return result.exit_code, result.output


def test_create_prints_the_secret_once_and_it_authenticates(keys: ApiKeys) -> None:
    code, out = invoke("create", "acme", "--role", "learn", "--note", "ci pipeline", "--actor", "ann")
    assert code == 0, out
    lines = out.splitlines()
    secret = lines[1]
    assert "cannot be shown again" in lines[2]
    record = keys.authenticate(secret)
    assert record is not None
    assert (record.tenant, record.role, record.note, record.created_by) == (
        "acme",
        "learn",
        "ci pipeline",
        "user:ann",
    )
    assert lines[0] == f"key {record.id} made: role 'learn' on tenant 'acme'"


def test_create_json_gives_the_record_and_the_secret(keys: ApiKeys) -> None:
    code, out = invoke("create", "*", "--role", "admin", "--json")
    assert code == 0, out
    made = json.loads(out)
    assert (made["tenant"], made["role"]) == ("*", "admin")
    record = keys.authenticate(made["secret"])
    assert record is not None
    assert record.id == made["id"]


def test_create_refuses_an_unknown_tenant_or_role_and_stores_nothing(keys: ApiKeys) -> None:
    code, out = invoke("create", "initech", "--role", "read")
    assert code == 2
    assert "no tenant 'initech'; the tenants are: acme" in said(out)
    code, out = invoke("create", "acme", "--role", "owner")
    assert code == 2
    assert "role 'owner': use one of read, learn, review, admin" in said(out)
    assert keys.list() == []


def test_list_shows_no_secret_and_filters_by_tenant(keys: ApiKeys) -> None:
    acme, acme_secret = keys.create("acme", "read", note="dashboards")
    keys.create("default", "admin")
    code, out = invoke("list", "--tenant", "acme", "--json")
    assert code == 0, out
    listed = json.loads(out)["keys"]
    assert [key["id"] for key in listed] == [acme.id]
    assert "secret" not in listed[0]
    code, out = invoke("list")
    assert code == 0, out
    assert acme.id in out
    assert "dashboards" in out
    assert acme_secret not in out


def test_revoke_refuses_the_key_from_then_on(keys: ApiKeys) -> None:
    record, secret = keys.create("acme", "admin")
    code, out = invoke("revoke", record.id)
    assert (code, out.strip()) == (0, f"key {record.id} revoked")
    assert keys.authenticate(secret) is None
    code, out = invoke("revoke", record.id)
    assert code == 2
    assert f"no API key '{record.id}'" in said(out)
