"""Workers refuse a step message whose tenant does not own its skillbook, and producers with a key
refuse before sending. Real Redis, real in-process workers; messages crafted as someone with
access to the broker would (tests/support/crafted.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from ace_workers.distributed.producer import Producer
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service
from ace_workers.distributed.tenancy import (
    ApiKeys,
    ForeignSkillbookError,
    InvalidApiKeyError,
    RoleTooLowError,
    Tenant,
    TenantRegistry,
)
from ace_workers.distributed.worker.dead_letters import read_dead_letters
from ace_workers.distributed.worker.errors import ForeignTenantError
from ace_workers.distributed.worker.tasks import NOT_RETRYABLE
from ace_workers.sim import failure_traces
from tests.support.crafted import publish_step, trace_payload
from tests.support.workers import running_service


@pytest.fixture
def service(redis_url: str) -> Iterator[Service]:
    """Workers of a fleet where tenant "acme" owns skillbook "book" (the crafted messages' skillbook)."""
    with running_service(redis_url, learn_threads=1) as built:
        runtime = built.runtime
        TenantRegistry(runtime.redis, prefix=runtime.settings.queue_prefix).add(
            Tenant("acme", skillbooks=("book",))
        )
        TenantRegistry(runtime.redis, prefix=runtime.settings.queue_prefix).add(Tenant("globex"))
        runtime.tenants.forget()
        yield built


def refused_sample(service: Service, tenant: str | None) -> tuple[str, str]:
    """Publish a crafted step for "book" naming ``tenant``; the sample's error and its dead letter's."""
    batch_id = uuid.uuid4().hex
    publish_step(service, trace_payload(service), batch_id=batch_id, tenant=tenant)
    handle = BatchHandle(batch_id, service.runtime)
    status = handle.wait(timeout=30)
    assert (status.done, status.failed) == (0, 1)
    letters = [
        letter for letter in read_dead_letters(service.runtime) if letter.kwarg("batch_id") == batch_id
    ]
    assert len(letters) == 1  # failed for good at once: never retried, parked once
    return handle.errors()[0]["error"], str((letters[0].letter or {})["error"])


def test_foreign_tenant_errors_are_not_retried() -> None:
    assert issubclass(ForeignTenantError, NOT_RETRYABLE)


def test_a_message_of_another_tenant_is_dead_lettered_naming_why_and_writes_nothing(service: Service) -> None:
    error, letter = refused_sample(service, "globex")
    expected = (
        "ForeignTenantError: skillbook 'book' belongs to tenant 'acme', but this message was sent for "
        "tenant 'globex'"
    )
    assert error.startswith(expected)
    assert letter.startswith(expected)
    store = service.runtime.store("book")
    assert (store.exists(), store.version()) == (False, 0)


def test_a_message_without_a_tenant_is_the_default_tenants(service: Service) -> None:
    error, _ = refused_sample(service, None)
    assert "belongs to tenant 'acme', but this message was sent for tenant 'default'" in error
    assert service.runtime.store("book").version() == 0


def test_a_producers_batch_carries_its_tenant_and_learns(service: Service) -> None:
    handle = service.producer.enqueue_traces(failure_traces(1), "book")
    status = handle.wait(timeout=60)
    assert (status.tenant, status.done, status.failed) == ("acme", 1, 0)
    assert service.runtime.store("book").version() > 0


def test_a_later_epoch_sent_by_a_worker_carries_the_batchs_tenant(service: Service) -> None:
    # Epoch 2 is sent by the worker that finished epoch 1 (resume_batch), from the batch record:
    # without the batch's tenant its messages would be the default tenant's and be refused.
    status = service.producer.enqueue_traces(failure_traces(2), "book", epochs=2).wait(timeout=60)
    assert (status.tenant, status.done, status.failed) == ("acme", 4, 0)


def producer_with(service: Service, api_key: str) -> Producer:
    return Producer(service.runtime.settings, dispatcher=service.dispatcher, api_key=api_key)


def test_a_producer_with_a_key_refuses_before_sending_what_its_key_may_not_learn(service: Service) -> None:
    runtime = service.runtime
    keys = ApiKeys(runtime.redis, prefix=runtime.settings.queue_prefix)
    _, globex_learner = keys.create("globex", "learn")
    reader, acme_reader = keys.create("acme", "read")
    revoked, acme_revoked = keys.create("acme", "admin")
    keys.revoke(revoked.id)
    with pytest.raises(ForeignSkillbookError, match="skillbook 'book': tenant 'acme' owns it"):
        producer_with(service, globex_learner).enqueue_traces(failure_traces(1), "book")
    with pytest.raises(RoleTooLowError, match=f"key '{reader.id}' of tenant 'acme' has role 'read'"):
        producer_with(service, acme_reader).enqueue_traces(failure_traces(1), "book")
    with pytest.raises(InvalidApiKeyError, match=f"API key '{revoked.id}': unknown or revoked"):
        producer_with(service, acme_revoked).enqueue_traces(failure_traces(1), "book")
    assert runtime.batches.running() == []  # nothing was sent
    assert runtime.batches.recent(10) == []


def test_a_producer_with_its_tenants_learn_key_sends(service: Service) -> None:
    runtime = service.runtime
    _, learner = ApiKeys(runtime.redis, prefix=runtime.settings.queue_prefix).create("acme", "learn")
    status = producer_with(service, learner).enqueue_traces(failure_traces(1), "book").wait(timeout=60)
    assert (status.tenant, status.done) == ("acme", 1)
