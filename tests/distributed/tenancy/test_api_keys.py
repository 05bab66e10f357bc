"""Scoped API keys in Redis: stored hashed, authenticated, revoked, and the one scope check."""

from __future__ import annotations

import hashlib
import json

import pytest
import redis

from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.errors import CorruptDataError
from ace_workers.distributed.store.keys import api_key_ids_key, api_keys_key
from ace_workers.distributed.tenancy import (
    OPERATOR,
    ApiKeys,
    ForeignSkillbookError,
    RoleTooLowError,
    Scope,
    Tenant,
    TenantMap,
    TenantRegistry,
    UnknownTenantError,
    authorize,
    visible_skillbooks,
)
from ace_workers.distributed.tenancy.errors import InvalidApiKeyError, TenancyError
from ace_workers.errors import InvalidSettingError


@pytest.fixture
def keys(redis_client: redis.Redis) -> ApiKeys:
    registry = TenantRegistry(redis_client)
    registry.add(Tenant("acme", prefixes=("acme-",)))
    registry.add(Tenant("globex", skillbooks=("globex-support",)))
    return ApiKeys(redis_client)


TENANTS = TenantMap(
    {"acme": Tenant("acme", prefixes=("acme-",)), "globex": Tenant("globex", prefixes=("gx-",))}
)


def test_a_created_key_authenticates_and_redis_keeps_only_its_hash(
    keys: ApiKeys, redis_client: redis.Redis
) -> None:
    record, secret = keys.create("acme", "learn", note="ci", actor="user:ann")
    assert secret.startswith(f"ace_{record.id}_")
    assert keys.authenticate(secret) == record
    assert (record.tenant, record.role, record.note, record.created_by) == ("acme", "learn", "ci", "user:ann")
    stored = redis_client.hgetall(api_keys_key())
    assert list(stored) == [hashlib.sha256(secret.encode()).hexdigest().encode()]
    dumped = json.dumps({k.decode(): v.decode() for k, v in stored.items()})
    assert secret.split("_", 2)[2] not in dumped


def test_a_key_for_an_unknown_tenant_or_role_is_refused_and_nothing_is_stored(
    keys: ApiKeys, redis_client: redis.Redis
) -> None:
    with pytest.raises(UnknownTenantError, match="no tenant 'initech'; the tenants are: acme, globex"):
        keys.create("initech", "read")
    with pytest.raises(TenancyError, match="role 'owner': use one of read, learn, review, admin"):
        keys.create("acme", "owner")
    assert redis_client.exists(api_keys_key(), api_key_ids_key()) == 0


def test_default_and_fleet_wide_keys_need_no_stored_tenant(keys: ApiKeys) -> None:
    default, _ = keys.create("default", "read")
    operator, _ = keys.create("*", "admin")
    assert (default.tenant, operator.scope.fleet_wide) == ("default", True)


def test_a_revoked_key_authenticates_nobody(keys: ApiKeys) -> None:
    record, secret = keys.create("acme", "admin")
    assert keys.revoke(record.id) is True
    assert keys.authenticate(secret) is None
    assert keys.revoke(record.id) is False
    with pytest.raises(InvalidApiKeyError, match=f"API key '{record.id}': unknown or revoked"):
        keys.require(secret)


def test_a_wrong_secret_of_a_real_id_and_a_malformed_one_authenticate_nobody(keys: ApiKeys) -> None:
    _record, secret = keys.create("acme", "admin")
    assert keys.authenticate(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
    assert keys.authenticate("not-a-key") is None
    with pytest.raises(InvalidApiKeyError, match="not a key of this fleet"):
        keys.require("not-a-key")


def test_list_filters_by_tenant_oldest_first(keys: ApiKeys) -> None:
    first, _ = keys.create("acme", "read")
    second, _ = keys.create("globex", "review")
    third, _ = keys.create("acme", "admin")
    assert [k.id for k in keys.list()] == [first.id, second.id, third.id]
    assert [k.id for k in keys.list("acme")] == [first.id, third.id]


def test_a_corrupt_record_authenticates_nobody_and_list_names_the_key(
    keys: ApiKeys, redis_client: redis.Redis
) -> None:
    record, secret = keys.create("acme", "admin")
    digest = hashlib.sha256(secret.encode()).hexdigest()
    redis_client.hset(api_keys_key(), digest, json.dumps({**record.to_dict(), "role": "root"}))
    assert keys.authenticate(secret) is None
    with pytest.raises(CorruptDataError, match=r"corrupt data in Redis: key 'ace:\{apikeys\}'.*role 'root'"):
        keys.list()


def test_a_record_stored_under_another_secrets_hash_is_not_that_secrets(
    keys: ApiKeys, redis_client: redis.Redis
) -> None:
    admin, admin_secret = keys.create("acme", "admin")
    _reader, reader_secret = keys.create("acme", "read")
    # Someone with write access to Redis copies the admin record under the reader's hash.
    digest = hashlib.sha256(reader_secret.encode()).hexdigest()
    redis_client.hset(api_keys_key(), digest, json.dumps(admin.to_dict()))
    assert keys.authenticate(reader_secret) is None
    assert keys.authenticate(admin_secret) == admin


def test_authorize_refuses_another_tenants_skillbook_naming_everything() -> None:
    scope = Scope("acme", "admin", "k1")
    with pytest.raises(ForeignSkillbookError) as info:
        authorize(scope, "read", "gx-billing", TENANTS)
    error = info.value
    assert (error.key_id, error.key_tenant, error.key_role) == ("k1", "acme", "admin")
    assert (error.skillbook, error.owner, error.needed) == ("gx-billing", "globex", "read")
    assert "tenant 'globex' owns it" in str(error)


def test_authorize_orders_roles_each_including_the_ones_before() -> None:
    learner = Scope("acme", "learn", "k2")
    assert authorize(learner, "read", "acme-support", TENANTS) == "acme"
    assert authorize(learner, "learn", "acme-support", TENANTS) == "acme"
    with pytest.raises(RoleTooLowError, match="has role 'learn': this needs role 'review'"):
        authorize(learner, "review", "acme-support", TENANTS)


def test_an_unowned_skillbook_is_the_default_tenants_and_operators_reach_every_one() -> None:
    with pytest.raises(ForeignSkillbookError):
        authorize(Scope("acme", "admin", "k"), "read", "misc", TENANTS)
    assert authorize(Scope("default", "read", "k"), "read", "misc", TENANTS) == "default"
    assert authorize(OPERATOR, "admin", "gx-billing", TENANTS) == "globex"


def test_visible_skillbooks_keeps_the_scopes_tenants_only() -> None:
    names = ["acme-a", "gx-b", "misc", "acme-c"]
    assert visible_skillbooks(Scope("acme", "read", "k"), names, TENANTS) == ["acme-a", "acme-c"]
    assert visible_skillbooks(OPERATOR, names, TENANTS) == names


def test_ace_api_key_is_checked_for_its_shape_and_never_shown() -> None:
    secret = "ace_0123abcd_" + "s" * 43
    assert WorkerSettings.from_env({"ACE_API_KEY": secret}).api_key == secret
    assert secret not in repr(WorkerSettings(api_key=secret))
    with pytest.raises(InvalidSettingError, match="ACE_API_KEY='\\(hidden\\)': not an API key") as info:
        WorkerSettings.from_env({"ACE_API_KEY": "hunter2-is-my-key"})
    assert "hunter2" not in str(info.value)
