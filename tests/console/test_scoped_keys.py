"""Scoped API keys on the console: a key's principal sees its tenant's skillbooks only, another
tenant's answer 404, and an action beyond its role 403 (the same authorize as MCP). Real HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from ace_workers.console.audit import read_audit
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.keys import dead_letters_key
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from tests.support.console import USER, RunningConsole, csrf_of, running_console
from tests.support.operations import add, batch

ALPHA, BETA = "alpha-docs", "beta-notes"


@pytest.fixture
def keys(idle_service: Service) -> ApiKeys:
    """Tenants alpha (alpha-*) and beta (beta-*), a skillbook and a batch each, and a parked letter each."""
    runtime = idle_service.runtime
    prefix = runtime.settings.queue_prefix
    registry = TenantRegistry(runtime.redis, prefix=prefix)
    registry.add(Tenant("alpha", prefixes=("alpha-",)))
    registry.add(Tenant("beta", prefixes=("beta-",)))
    runtime.tenants.forget()
    for name in (ALPHA, BETA):
        store = runtime.store(name)
        store.apply(batch(add(f"A skill of {name}.", "general")))
        store.apply(batch(add(f"Another skill of {name}.", "general")))
        runtime.batches.create(
            f"batch-{name}", skillbook=name, recipe="trace_analyser", per_epoch=1, epochs=1, skills_at_start=0
        )
        letter = {
            "task_id": "t",
            "step": "ReflectStep",
            "kwargs": {"skillbook": name, "batch_id": f"batch-{name}", "epoch": 1, "sample_index": 1},
            "payload": {},
            "error": "LLMError: earlier",
            "parked_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        }
        runtime.redis.rpush(dead_letters_key(prefix), json.dumps(letter))
    return ApiKeys(runtime.redis, prefix=prefix)


@pytest.fixture
def console(idle_service: Service) -> Iterator[RunningConsole]:
    with running_console(idle_service) as running:
        yield running


def test_a_tenants_key_lists_only_its_tenants_skillbooks_batches_and_letters(
    keys: ApiKeys, console: RunningConsole
) -> None:
    _, secret = keys.create("alpha", "read")
    with console.client(token=secret) as client:
        index = client.get("/api/skillbooks")
        assert index.status_code == 200
        assert [row["name"] for row in index.json()["skillbooks"]] == [ALPHA]
        batches = client.get("/api/batches").json()
        assert [row["skillbook"] for row in batches["running"] + batches["recent"]] == [ALPHA]
        letters = client.get("/api/dead-letters").json()
        assert [letter["skillbook"] for letter in letters["letters"]] == [ALPHA]
        assert letters["parked"] == 1
        assert "beta" not in client.get("/skillbooks").text  # the page shows what its API does
    with console.client(token=console.token) as operator:  # a fleet-wide key: a fleet operator
        names = [row["name"] for row in operator.get("/api/skillbooks").json()["skillbooks"]]
        assert names == [ALPHA, BETA]


def test_a_person_signed_in_with_a_tenants_key_has_its_tenant_and_role(
    keys: ApiKeys, console: RunningConsole, idle_service: Service
) -> None:
    reader, secret = keys.create("alpha", "read")
    # The browser's sign-in: the key's secret as the password, the user name free.
    with console.client(auth=(USER, secret)) as person:
        page = person.get("/skillbooks")
        assert page.status_code == 200
        assert f"key:{reader.id}" in page.text
        assert [row["name"] for row in person.get("/api/skillbooks").json()["skillbooks"]] == [ALPHA]
        assert person.get(f"/api/skillbooks/{BETA}").status_code == 404
        refused = person.post(
            f"/api/skillbooks/{ALPHA}/labels/prod",
            json={"to": 1, "expect": ""},
            headers={"X-CSRF-Token": csrf_of(person)},
        )
        assert refused.status_code == 403
        assert f"key '{reader.id}' of tenant 'alpha' has role 'read'" in refused.json()["message"]
    assert idle_service.runtime.store(ALPHA).labels.all() == {}


def test_another_tenants_skillbook_and_batch_answer_404_as_if_missing(
    keys: ApiKeys, console: RunningConsole, idle_service: Service
) -> None:
    _, secret = keys.create("alpha", "admin")
    with console.client(token=secret) as client:
        for path in (
            f"/api/skillbooks/{BETA}",
            f"/api/skillbooks/{BETA}/history",
            f"/api/skillbooks/{BETA}/review",
            f"/api/skillbooks/{BETA}/evaluations",
            f"/api/batches/batch-{BETA}",
            f"/api/batches?skillbook={BETA}",
        ):
            response = client.get(path)
            assert response.status_code == 404, path
        foreign = client.get(f"/api/skillbooks/{BETA}").json()
        missing = client.get("/api/skillbooks/beta-nothing-here").json()
        assert foreign["message"] == f"no skillbook {BETA!r} in this fleet's Redis"
        assert missing["message"] == "no skillbook 'beta-nothing-here' in this fleet's Redis"
        moved = client.post(f"/api/skillbooks/{BETA}/labels/prod", json={"to": 1, "expect": ""})
        assert moved.status_code == 404
        assert client.get(f"/api/skillbooks/{ALPHA}").status_code == 200
    assert idle_service.runtime.store(BETA).labels.all() == {}


def test_an_action_beyond_the_keys_role_answers_403_and_its_role_may(
    keys: ApiKeys, console: RunningConsole, idle_service: Service
) -> None:
    reader, read_secret = keys.create("alpha", "read")
    admin, admin_secret = keys.create("alpha", "admin")
    store = idle_service.runtime.store(ALPHA)
    with console.client(token=read_secret) as client:
        refused = client.post(f"/api/skillbooks/{ALPHA}/labels/prod", json={"to": 1, "expect": ""})
        assert refused.status_code == 403
        message = refused.json()["message"]
        assert f"key '{reader.id}' of tenant 'alpha' has role 'read': this needs role 'admin'" in message
        rollback = client.post(f"/api/skillbooks/{ALPHA}/rollback", json={"to": 1, "expect": 2})
        assert rollback.status_code == 403
        retry = client.post("/api/dead-letters/retry", json={"skillbook": ALPHA})
        assert retry.status_code == 403
    assert store.labels.all() == {}
    assert store.version() == 2
    with console.client(token=admin_secret) as client:
        moved = client.post(f"/api/skillbooks/{ALPHA}/labels/prod", json={"to": 1, "expect": ""})
        assert moved.status_code == 200, moved.text
    assert store.labels.all() == {"prod": 1}
    assert store.labels.history("prod")[0].actor == f"key:{admin.id}"
    audit = read_audit(idle_service.runtime.redis, idle_service.runtime.settings.queue_prefix, 10)
    assert audit[0].user == f"key:{admin.id}"


def test_a_tenants_key_retries_only_letters_of_a_skillbook_it_names(
    keys: ApiKeys, console: RunningConsole
) -> None:
    _, secret = keys.create("alpha", "admin")
    with console.client(token=secret) as client:
        unnamed = client.post("/api/dead-letters/retry", json={})
        assert unnamed.status_code == 400
        assert "name it (skillbook=)" in unnamed.json()["message"]
        assert client.post("/api/dead-letters/retry", json={"skillbook": BETA}).status_code == 404


def test_a_revoked_key_is_refused(keys: ApiKeys, console: RunningConsole) -> None:
    record, secret = keys.create("alpha", "admin")
    with console.client(token=secret) as client:
        assert client.get("/api/skillbooks").status_code == 200
        keys.revoke(record.id)
        assert client.get("/api/skillbooks").status_code == 401


def test_a_tenants_learn_key_cancels_its_own_batch_and_not_another_tenants(
    keys: ApiKeys, console: RunningConsole, idle_service: Service
) -> None:
    _, secret = keys.create("alpha", "learn")
    with console.client(token=secret) as client:
        foreign = client.post(f"/api/batches/batch-{BETA}/cancel", json={})
        own = client.post(f"/api/batches/batch-{ALPHA}/cancel", json={})
    assert foreign.status_code == 404  # another tenant's batch is as missing as one never made
    assert idle_service.runtime.batches.status(f"batch-{BETA}").state.value == "running"
    assert own.status_code == 200, own.text
    assert idle_service.runtime.batches.status(f"batch-{ALPHA}").state.value == "cancelled"
