"""``tenant set --redact``: kept with the tenant, over ACE_REDACT for its traces; 'fleet' goes back."""

from __future__ import annotations

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.tenancy import Tenant, TenantRegistry
from ace_workers.distributed.tenancy.errors import InvalidTenantError
from ace_workers.redaction import redactor_for
from tests.support.cli import said
from tests.support.redaction import API_KEY, EMAIL
from tests.support.schema0 import stamp_current_schema
from tests.support.workers import build_test_service

PREFIX = "redacttenants"


@pytest.fixture
def registry(clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str) -> TenantRegistry:
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    stamp_current_schema(redis_client, PREFIX)
    return TenantRegistry(redis_client, prefix=PREFIX)


def tenant(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["tenant", *args])
    return result.exit_code, said(result.output)


def test_set_redact_is_stored_with_the_tenant_and_fleet_drops_it(registry: TenantRegistry) -> None:
    assert tenant("add", "acme", "--prefix", "acme-")[0] == 0
    code, out = tenant("set", "acme", "--redact", "default,ipv4,EMP=EMP-[0-9]{2,6}")
    assert code == 0, out
    assert "redacts: default,ipv4,EMP=EMP-[0-9]{2,6}" in out
    assert registry.get("acme").redact == "default,ipv4,EMP=EMP-[0-9]{2,6}"

    code, out = tenant("set", "acme", "--redact", "fleet")
    assert code == 0, out
    assert registry.get("acme").redact is None
    assert "redacts: as ACE_REDACT says" in out


def test_a_bad_redact_entry_is_one_line_naming_it_and_changes_nothing(registry: TenantRegistry) -> None:
    tenant("add", "acme", "--prefix", "acme-", "--redact", "off")
    code, out = tenant("set", "acme", "--redact", "default,ipv5")

    assert code == 2
    assert "--redact" in out
    assert "entry 'ipv5': unknown kind 'ipv5'" in out
    assert registry.get("acme").redact == "off"


def test_a_stored_tenant_with_a_bad_redaction_is_refused() -> None:
    with pytest.raises(InvalidTenantError, match="entry 'x=': the regex after '=' is empty"):
        Tenant.from_dict({"name": "acme", "redact": "default,x="})


def test_the_tenant_s_setting_replaces_the_fleet_s_for_its_skillbooks(
    redis_client: redis.Redis, redis_url: str
) -> None:
    service = build_test_service(redis_url, redact="default,-email")
    try:
        service.runtime.tenants.registry.add(Tenant("strict", prefixes=("strict-",), redact="default"))
        service.runtime.tenants.registry.add(Tenant("raw", prefixes=("raw-",), redact="off"))
        service.runtime.tenants.forget()
        text = f"{EMAIL} {API_KEY}"
        runtime = service.runtime
        by_tenant = {name: runtime.redactor(name).text(text) for name in ("default", "strict", "raw")}
    finally:
        service.close()

    assert by_tenant == {
        "default": f"{EMAIL} <SECRET_1>",  # ACE_REDACT leaves e-mail out
        "strict": "<EMAIL_1> <SECRET_1>",
        "raw": text,
    }
    assert runtime.redactor("gone") is redactor_for("default,-email")  # a removed tenant: the fleet's
