"""Every tenant's spend is metered, budget or none, in the round trip of a step's batch script."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from celery import signals
from redis.connection import Connection

from ace_workers.distributed.store.batches import BatchStore, SampleFinish
from ace_workers.distributed.store.keys import DEFAULT_TENANT
from ace_workers.distributed.tenancy.deferred_samples import DeferredSamples
from ace_workers.distributed.tenancy.limiter import Limiter, WindowUsage
from ace_workers.distributed.tenancy.spend_meter import SpendMeter
from ace_workers.distributed.tenancy.tenants import ALL_MODELS, Budget, Tenant, TenantRegistry
from ace_workers.distributed.tenancy.usage import usage_report
from ace_workers.distributed.worker.celery_worker import write_spend_at_worker_shutdown
from ace_workers.sim import failure_traces
from tests.support.fixtures import connect_test_redis, server_or_cluster
from tests.support.workers import build_test_service, running_service

MODEL = "openai/gpt-4o-mini"
TENANT = "team-a"
SAMPLES = 4
LLM_STEPS = ("ReflectStep", "UpdateStep")  # the trace analyser's steps that call the LLM, once each
TIMEOUT = 90


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """The spend keys and a batch's keys live in different slots: both layouts must meter."""
    yield from server_or_cluster(request)


def started_batch(batches: BatchStore, batch_id: str) -> None:
    """A batch of one sample, sent, as a producer leaves it before its first step starts."""
    batches.create(batch_id, skillbook="a-book", recipe="r", per_epoch=1, epochs=1, skills_at_start=0)
    batches.record_sent(batch_id, 1, 1)


def metered_batch(client: redis.Redis) -> tuple[str, SpendMeter, BatchStore]:
    """Under a new prefix: a spend meter, a batch store it rides on, and its started batch "b1"."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    meter = SpendMeter(prefix=prefix)
    batches = BatchStore(client, prefix=prefix, ttl_seconds=60, riders=meter)
    started_batch(batches, "b1")
    return prefix, meter, batches


def day_spend(client: redis.Redis, prefix: str, tenant: str, model: str = ALL_MODELS) -> WindowUsage:
    """``tenant``'s spend on ``model`` today, as the limiter reads it (what status and console show)."""
    usage = Limiter(client, prefix=prefix).usage(tenant).window(model, "day")
    assert usage is not None, f"nothing metered for {tenant} on {model}"
    return usage


@pytest.fixture
def server(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the test Redis server (not a cluster), flushed around the test."""
    client = connect_test_redis(redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def test_a_steps_start_writes_the_spend_metered_since_the_last_script(server: redis.Redis) -> None:
    prefix, meter, batches = metered_batch(server)
    meter.add(TENANT, MODEL, 100, 0.25)
    meter.add(TENANT, MODEL, 50, 0.0)

    assert batches.record_progress("b1", 1, 1, first_step=True) is True
    assert batches.record_progress("b1", 1, 1, first_step=False) is True  # nothing pending: nothing more

    for model in (MODEL, ALL_MODELS):
        spent = day_spend(server, prefix, TENANT, model)
        assert (spent.tokens, spent.requests) == (150, 2)
        assert spent.cost == pytest.approx(0.25)
    assert Limiter(server, prefix=prefix).usage(TENANT).window(MODEL, "month") is not None


def test_a_samples_finish_writes_the_pending_spend_too(server: redis.Redis) -> None:
    prefix, meter, batches = metered_batch(server)
    meter.add(DEFAULT_TENANT, MODEL, 70, 0.0)

    assert batches.record_done("b1", 1, 1, {"ok": True}) == SampleFinish(1, quiet=False)

    assert day_spend(server, prefix, DEFAULT_TENANT).tokens == 70


def test_the_limiters_read_of_the_throttled_models_writes_the_pending_spend(
    redis_client: redis.Redis,
) -> None:
    # On a cluster no batch script carries the spend (its slot is the batch's); this read, in the
    # spend's own slot, does, on either layout.
    prefix = f"t{uuid.uuid4().hex[:8]}"
    meter = SpendMeter(prefix=prefix)
    batches = BatchStore(redis_client, prefix=prefix, ttl_seconds=60, riders=meter)
    limiter = Limiter(redis_client, prefix=prefix, riders=meter, throttled_max_age=0)
    started_batch(batches, "b1")
    meter.add(TENANT, MODEL, 100, 0.5)
    batches.record_progress("b1", 1, 1, first_step=True)
    meter.add(TENANT, MODEL, 20, 0.0)

    assert limiter.throttled(MODEL) is False

    spent = day_spend(redis_client, prefix, TENANT)
    assert (spent.tokens, spent.requests) == (120, 2)
    assert spent.cost == pytest.approx(0.5)


class SendCounter:
    """Counts the writes clients make to Redis: one per round trip (a pipeline is written at once)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sends = 0
        original = Connection.send_packed_command

        def counted(connection: Connection, command: Any, check_health: bool = True) -> None:
            self.sends += 1
            original(connection, command, check_health)

        monkeypatch.setattr(Connection, "send_packed_command", counted)


def test_metering_adds_no_round_trip_to_a_steps_start(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = redis.Redis.from_url(redis_url)
    prefix, meter, batches = metered_batch(client)
    batches.record_progress("b1", 1, 1, first_step=True)  # the script is loaded from here on
    sends = SendCounter(monkeypatch)

    batches.record_progress("b1", 1, 1, first_step=False)
    unmetered = sends.sends
    meter.add(TENANT, MODEL, 100, 0.5)
    meter.add("team-b", MODEL, 10, 0.0)
    batches.record_progress("b1", 1, 1, first_step=False)

    assert unmetered == 1
    assert sends.sends - unmetered == 1
    assert day_spend(client, prefix, "team-b").tokens == 10
    client.close()


def test_spend_not_written_is_kept_for_the_next_script(redis_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    meter = SpendMeter(prefix=prefix)
    meter.add(TENANT, MODEL, 100, 0.0)
    refused = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)  # nothing listens there
    with pytest.raises(redis.ConnectionError):
        meter.flush(refused)

    client = redis.Redis.from_url(redis_url)
    meter.flush(client)

    assert day_spend(client, prefix, TENANT).tokens == 100
    client.close()


def run_batch(redis_url: str, tenant: Tenant | None, skillbook: str) -> tuple[WindowUsage, int, int, int]:
    """One batch on in-process workers with priced simulated calls: the tenant's spend today, the
    tokens and LLM step runs its steps counted, and the tokens today `tenant usage` reports."""
    with running_service(redis_url, learn_threads=2, sim_cost_per_1k_tokens=1.0) as service:
        runtime = service.runtime
        prefix = runtime.settings.queue_prefix
        if tenant is not None:
            TenantRegistry(runtime.redis, prefix=prefix).add(tenant)
        handle = service.producer.enqueue_traces(failure_traces(SAMPLES, topics=2), skillbook)
        status = handle.wait(timeout=TIMEOUT)
        assert (status.done, status.failed) == (SAMPLES, 0)
        name = tenant.name if tenant is not None else DEFAULT_TENANT
        spent = day_spend(runtime.redis, prefix, name)
        steps = runtime.batches.step_stats(handle.batch_id)
        tokens = sum(s.prompt_tokens + s.completion_tokens for s in steps)
        calls = sum(s.done for s in steps if s.name in LLM_STEPS)
        deferrals = DeferredSamples(runtime.redis, prefix=prefix)
        registry = TenantRegistry(runtime.redis, prefix=prefix)
        (report,) = usage_report(registry.map(), deferrals, runtime.limiter, [name]).tenants
    row = next(row for row in report.rows if (row.model, row.window) == (ALL_MODELS, "day"))
    return spent, tokens, calls, row.tokens


@pytest.mark.parametrize("tenant", [Tenant(TENANT, prefixes=("a-",)), None], ids=["no-budget", "default"])
def test_a_tenant_without_budget_or_limit_shows_its_spend_after_a_batch(
    redis_url: str, tenant: Tenant | None
) -> None:
    spent, tokens, calls, reported = run_batch(redis_url, tenant, "a-book")

    assert calls == 2 * SAMPLES
    assert reported == spent.tokens
    assert spent.requests == calls
    assert spent.tokens == tokens > 0
    assert spent.cost > 0


def test_a_tenant_with_a_budget_is_metered_once(redis_url: str) -> None:
    budgeted = Tenant(TENANT, prefixes=("a-",), budgets=(Budget(ALL_MODELS, cost_per_day=1000.0),))

    spent, tokens, calls, _ = run_batch(redis_url, budgeted, "a-book")

    # Every call settled through the limiter; the meter added none of them again.
    assert spent.requests == calls == 2 * SAMPLES
    assert spent.tokens == tokens


def test_a_worker_shutting_down_writes_the_spend_it_holds(redis_url: str) -> None:
    service = build_test_service(redis_url)
    runtime = service.runtime
    write_spend_at_worker_shutdown(runtime)
    try:
        runtime.spend_meter.add(TENANT, MODEL, 30, 0.0)
        signals.worker_process_shutdown.send(sender=None, pid=0, exitcode=0)  # as a prefork child ends

        assert day_spend(runtime.redis, runtime.settings.queue_prefix, TENANT).tokens == 30
    finally:
        signals.worker_shutdown.disconnect(dispatch_uid="ace.write_spend")
        signals.worker_process_shutdown.disconnect(dispatch_uid="ace.write_spend.child")
        service.close()
