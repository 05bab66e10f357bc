"""``tenant add|set|list|show|remove``: text and --json, every change in Redis, clear errors."""

from __future__ import annotations

import json

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.store import RedisSkillbookStore
from ace_workers.distributed.tenancy import Budget, TenantRegistry
from tests.support.cli import said
from tests.support.operations import add, batch
from tests.support.schema0 import stamp_current_schema

PREFIX = "clitenants"


@pytest.fixture
def registry(clean_env: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str) -> TenantRegistry:
    """An empty tenant registry with skillbooks acme-support and other, the CLI pointed at it."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", PREFIX)
    stamp_current_schema(redis_client, PREFIX)  # as this version's first process did
    for name in ("acme-support", "other"):
        RedisSkillbookStore(redis_client, name, prefix=PREFIX).apply(batch(add("Check units.", "math")))
    return TenantRegistry(redis_client, prefix=PREFIX)


def invoke(*args: str) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(app, ["tenant", *args])
    return result.exit_code, result.output, result.exception


def test_add_stores_the_tenant_with_its_budgets(registry: TenantRegistry) -> None:
    code, out, _ = invoke(
        "add", "acme", "--prefix", "acme-", "--weight", "3", "--budget", "*:cost_per_day=5", "--json"
    )
    assert code == 0, out
    assert json.loads(out)["weight"] == 3
    tenant = registry.get("acme")
    assert tenant.prefixes == ("acme-",)
    assert tenant.budgets == (Budget("*", cost_per_day=5.0),)
    assert registry.tenant_of("acme-support") == "acme"


def test_set_changes_one_budget_limit_and_keeps_the_others(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--budget", "*:cost_per_day=5", "--budget", "*:tokens_per_month=1000")
    code, out, _ = invoke("set", "acme", "--budget", "*:cost_per_day=8")
    assert code == 0, out
    assert registry.get("acme").budgets == (Budget("*", tokens_per_month=1000, cost_per_day=8.0),)


def test_none_lifts_a_limit_and_an_empty_budget_is_dropped(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--budget", "gpt-4o:tokens_per_day=10")
    code, out, _ = invoke("set", "acme", "--budget", "gpt-4o:tokens_per_day=none")
    assert code == 0, out
    assert registry.get("acme").budgets == ()


def test_a_model_name_with_a_colon_is_kept_whole(registry: TenantRegistry) -> None:
    code, out, _ = invoke("add", "acme", "--budget", "ollama/llama3:8b:tokens_per_day=10")
    assert code == 0, out
    assert registry.get("acme").budgets[0].model == "ollama/llama3:8b"


def test_a_malformed_budget_is_a_usage_error_naming_the_option(registry: TenantRegistry) -> None:
    code, out, _ = invoke("add", "acme", "--budget", "*:dollars=5")
    assert code == 2
    assert "LIMIT must be one of" in said(out)
    assert registry.all() == {}


def test_set_on_default_stores_it(registry: TenantRegistry) -> None:
    code, out, _ = invoke("set", "default", "--max-in-flight", "4")
    assert code == 0, out
    assert registry.get("default").max_in_flight == 4


def test_remove_skillbook_it_does_not_own_is_refused(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--skillbook", "other")
    code, out, _ = invoke("set", "acme", "--remove-skillbook", "acme-support")
    assert code == 2
    assert "does not own" in said(out)
    assert registry.get("acme").skillbooks == ("other",)


def test_a_conflicting_claim_fails_and_changes_nothing(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--skillbook", "other")
    code, out, _ = invoke("add", "globex", "--skillbook", "other")
    assert code == 4  # a conflict: refused (operations.outcomes), nothing changed
    # TenantConflictError's line, as the CLI ends with it.
    assert "error: tenant 'globex' cannot own skillbook 'other': tenant 'acme' does" in said(out)
    assert registry.tenant_of("other") == "acme"


def test_list_shows_default_and_who_owns_the_skillbooks_now(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--prefix", "acme-")
    code, out, _ = invoke("list", "--json")
    assert code == 0, out
    listed = {row["name"]: row["owned_skillbooks"] for row in json.loads(out)}
    assert listed == {"acme": ["acme-support"], "default": ["other"]}


def test_show_names_the_skillbooks_and_budgets(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--prefix", "acme-", "--budget", "*:cost_per_month=50")
    code, out, _ = invoke("show", "acme")
    assert code == 0, out
    assert "skillbooks now: acme-support" in said(out)
    assert "all models: cost_per_month=50.0" in said(out)


def test_remove_gives_the_skillbooks_back_to_default(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--prefix", "acme-")
    code, out, _ = invoke("remove", "acme")
    assert code == 0, out
    assert registry.tenant_of("acme-support") == "default"


def test_a_bad_tenant_name_is_a_usage_error(registry: TenantRegistry) -> None:
    code, out, _ = invoke("add", "Acme")
    assert code == 2
    assert "lowercase" in said(out)


def test_set_echoes_the_new_budget(registry: TenantRegistry) -> None:
    invoke("add", "acme", "--budget", "*:cost_per_day=5")
    code, out, _ = invoke("set", "acme", "--budget", "openai/gpt-4o:tokens_per_day=2000")
    assert code == 0, out
    assert (
        "budgets: all models: cost_per_day=5.0; openai/gpt-4o: tokens_per_day=2000 (when spent: wait)"
        in said(out)
    )
