"""Tenants in Redis: who owns which skillbook, conflicts refused, caches that see changes."""

from __future__ import annotations

import json

import pytest
import redis

from ace_workers.distributed.store.errors import CorruptDataError
from ace_workers.distributed.store.keys import tenants_key
from ace_workers.distributed.tenancy import (
    DEFAULT_TENANT,
    Budget,
    CachedTenants,
    InvalidTenantError,
    Tenant,
    TenantConflictError,
    TenantExistsError,
    TenantMap,
    TenantRegistry,
    UnknownTenantError,
)


@pytest.fixture
def registry(redis_client: redis.Redis) -> TenantRegistry:
    return TenantRegistry(redis_client)


def test_an_explicit_skillbook_wins_over_a_prefix_and_a_longer_prefix_over_a_shorter() -> None:
    tenants = TenantMap(
        {
            "acme": Tenant("acme", prefixes=("acme-",)),
            "acme-labs": Tenant("acme-labs", prefixes=("acme-labs-",)),
            "special": Tenant("special", skillbooks=("acme-labs-x",)),
        }
    )
    assert tenants.tenant_of("acme-support") == "acme"
    assert tenants.tenant_of("acme-labs-y") == "acme-labs"
    assert tenants.tenant_of("acme-labs-x") == "special"


def test_a_skillbook_no_tenant_owns_belongs_to_default() -> None:
    assert TenantMap({"acme": Tenant("acme", prefixes=("acme-",))}).tenant_of("other") == DEFAULT_TENANT


def test_default_exists_without_being_added(registry: TenantRegistry) -> None:
    assert registry.get(DEFAULT_TENANT) == Tenant(DEFAULT_TENANT)


def test_an_unknown_tenant_is_named_with_the_known_ones(registry: TenantRegistry) -> None:
    registry.add(Tenant("acme"))
    with pytest.raises(UnknownTenantError, match=r"'globex'.*acme"):
        registry.get("globex")


def test_an_added_tenant_reads_back_whole(registry: TenantRegistry) -> None:
    tenant = Tenant(
        "acme",
        skillbooks=("support",),
        prefixes=("acme-",),
        weight=3,
        max_in_flight=20,
        budgets=(Budget("*", tokens_per_day=1000, cost_per_month=5.0),),
        on_budget="fail",
    )
    registry.add(tenant)
    assert registry.get("acme") == tenant


def test_adding_a_tenant_twice_is_refused(registry: TenantRegistry) -> None:
    registry.add(Tenant("acme"))
    with pytest.raises(TenantExistsError, match="tenant set acme"):
        registry.add(Tenant("acme", weight=2))
    assert registry.get("acme").weight == 1


def test_two_tenants_cannot_own_the_same_skillbook(registry: TenantRegistry) -> None:
    registry.add(Tenant("acme", skillbooks=("support",)))
    with pytest.raises(TenantConflictError, match=r"'support'.*'acme'"):
        registry.add(Tenant("globex", skillbooks=("support",)))
    assert registry.tenant_of("support") == "acme"


def test_two_tenants_cannot_claim_the_same_prefix(registry: TenantRegistry) -> None:
    registry.add(Tenant("acme", prefixes=("team-",)))
    with pytest.raises(TenantConflictError, match="prefix 'team-'"):
        registry.update(DEFAULT_TENANT, lambda t: Tenant(t.name, prefixes=("team-",)))


def test_an_update_changes_the_owner_and_bumps_the_version(registry: TenantRegistry) -> None:
    registry.add(Tenant("acme"))
    before = registry.version()
    registry.update("acme", lambda t: Tenant(t.name, skillbooks=("support",)))
    assert registry.tenant_of("support") == "acme"
    assert registry.version() > before


def test_setting_default_stores_it(registry: TenantRegistry) -> None:
    registry.update(DEFAULT_TENANT, lambda t: Tenant(t.name, weight=5))
    assert registry.all()[DEFAULT_TENANT].weight == 5


def test_a_removed_tenants_skillbooks_go_back_to_default(registry: TenantRegistry) -> None:
    registry.add(Tenant("acme", skillbooks=("support",)))
    assert registry.remove("acme") is True
    assert registry.tenant_of("support") == DEFAULT_TENANT


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"name": "Acme"}, "name"),
        ({"name": "a", "weight": 0}, "weight"),
        ({"name": "a", "max_in_flight": 0}, "max_in_flight"),
        ({"name": "a", "on_budget": "panic"}, "on_budget"),
        ({"name": "a", "prefixes": ("bad prefix",)}, "prefix"),
        ({"name": "a", "skillbooks": ("no/slash",)}, "skillbook"),
    ],
)
def test_a_bad_field_is_named(fields: dict[str, object], named: str) -> None:
    with pytest.raises(InvalidTenantError) as caught:
        Tenant(**fields)  # type: ignore[arg-type]
    assert caught.value.field == named


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(InvalidTenantError, match="cost_per_day"):
        Budget(cost_per_day=-1.0)


def test_a_call_counts_against_its_models_budget_and_the_all_models_one() -> None:
    tenant = Tenant(
        "acme",
        budgets=(
            Budget("*", tokens_per_day=10),
            Budget("gpt-4o", tokens_per_day=5),
            Budget("o1", tokens_per_day=1),
        ),
    )
    assert [b.model for b in tenant.budget_for("gpt-4o")] == ["*", "gpt-4o"]


def test_corrupt_tenant_json_names_the_key_and_the_tenant(
    registry: TenantRegistry, redis_client: redis.Redis
) -> None:
    redis_client.hset(tenants_key(), "acme", json.dumps({"name": "acme", "weight": "lots"}))
    with pytest.raises(CorruptDataError, match=r"tenants.*'acme'.*weight"):
        registry.all()


def test_a_cache_sees_a_change_once_its_age_has_passed(registry: TenantRegistry) -> None:
    now = [0.0]
    cache = CachedTenants(registry, max_age_seconds=2.0, clock=lambda: now[0])
    assert cache.tenant_of("support") == DEFAULT_TENANT
    registry.add(Tenant("acme", skillbooks=("support",)))
    now[0] = 1.0
    assert cache.tenant_of("support") == DEFAULT_TENANT  # still within its age
    now[0] = 2.5
    assert cache.tenant_of("support") == "acme"
