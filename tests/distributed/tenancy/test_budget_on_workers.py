"""A tenant's cost budget on real worker processes and the real limiter: spending stops at the limit.

The simulated LLM prices its calls (ACE_SIM_COST_PER_1K_TOKENS), every call passes the fleet's
limiter, and the spend is read twice, independently: the limiter's usage of the tenant and the
batch's per-step cost figures. They must agree.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app as cli
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchStatus
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.step_stats import StepStats
from ace_workers.distributed.tenancy.deferred_samples import DeferredSamples
from ace_workers.distributed.tenancy.limiter import WindowUsage
from ace_workers.distributed.tenancy.tenants import ALL_MODELS, Budget, Tenant, TenantRegistry
from ace_workers.distributed.worker.dead_letters import read_dead_letters
from ace_workers.distributed.worker.deferrals import release_deferred
from ace_workers.distributed.worker.reconcile import reconcile_running
from ace_workers.sim import failure_traces
from tests.support.processes import REPO, start_worker, stop, wait_until_served
from tests.support.schema0 import stamp_current_schema
from tests.support.waiting import wait_for
from tests.support.workers import running_service

pytestmark = pytest.mark.slow

TIMEOUT = 90
TENANT = "team-a"
SKILLBOOK = "a-book"
SAMPLES = 12
# USD per 1000 tokens: a Reflect or Update call of the simulator costs about half a dollar, and
# its reservation (the prompt and the 1024 completion tokens a call may use) about 1.1 dollars.
COST_PER_1K = 1.0
BUDGET_USD = 3.0  # a few calls of the 24 the batch would make
LLM_STEPS = ("ReflectStep", "UpdateStep")  # the trace analyser's steps that call the LLM, once each


@dataclass
class Fleet:
    """Worker processes of one fleet, and the test's own service on it (producer, limiter, batches)."""

    service: Service
    log: Path

    @property
    def deferrals(self) -> DeferredSamples:
        """The fleet's parked samples."""
        runtime = self.service.runtime
        return DeferredSamples(runtime.redis, prefix=runtime.settings.queue_prefix)

    def spend(self) -> WindowUsage:
        """The tenant's spend on all models today, as the fleet's limiter counts it."""
        usage = self.service.runtime.limiter.usage(TENANT).window(ALL_MODELS, "day")
        assert usage is not None, "the limiter counted nothing for the tenant"
        return usage


@contextmanager
def two_worker_processes(tmp_path: Path, redis_url: str, client: redis.Redis) -> Iterator[Fleet]:
    """Two worker processes that make the LLM calls (two threads each) and one writer, all priced."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    stamp_current_schema(client, prefix)  # as this version's first process did
    TenantRegistry(client, prefix=prefix).add(
        Tenant(TENANT, prefixes=("a-",), budgets=(Budget(ALL_MODELS, cost_per_day=BUDGET_USD),))
    )
    values = {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": prefix,
        "ACE_SIM_TRUST_THRESHOLD": "0",
        "ACE_SIM_COST_PER_1K_TOKENS": str(COST_PER_1K),
        # Calls take a moment, so both processes have calls in flight (reserved, not settled) together.
        "ACE_SIM_LATENCY_SECONDS": "0.05",
    }
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    service = build_service(WorkerSettings.from_env(values), redis_url=redis_url)
    log = tmp_path / "workers.log"
    workers = [
        start_worker({**env, **values}, log, queues="execute,learn", concurrency=2, hostname=f"w{n}@%h")
        for n in (1, 2)
    ]
    workers.append(start_worker({**env, **values}, log, queues="write", concurrency=1, hostname="writer@%h"))
    try:
        wait_until_served(service, ("execute", "learn", "write"))
        yield Fleet(service, log)
    finally:
        stop(*workers)
        service.close()


def settled(fleet: Fleet, batch_id: str) -> BatchStatus:
    """Wait until no sample runs or is queued: each is done or waits for budget with its step parked."""
    runtime = fleet.service.runtime

    def check() -> BatchStatus | None:
        status = runtime.batches.status(batch_id)
        if status.running or status.queued or status.waiting_for_budget != fleet.deferrals.count(TENANT):
            return None
        return status if fleet.spend().reserved_cost == 0 else None

    return wait_for(check, TIMEOUT, "every sample done or parked, no call in flight")


def steps_of(fleet: Fleet, batch_id: str) -> dict[str, StepStats]:
    """The batch's per-step figures by step name."""
    return {stats.name: stats for stats in fleet.service.runtime.batches.step_stats(batch_id)}


def step_cost(steps: dict[str, StepStats]) -> float:
    """What the batch's steps say they spent, in USD."""
    return sum(stats.cost or 0.0 for stats in steps.values())


def one_call(steps: dict[str, StepStats]) -> float:
    """The cost of one LLM call: the dearest of the LLM steps' mean (each makes one call per sample)."""
    return max(
        (steps[name].cost or 0.0) / steps[name].done
        for name in LLM_STEPS
        if name in steps and steps[name].done
    )


def reset_text() -> str:
    """When today's budget window resets, as a refusal says it: the next midnight UTC."""
    return (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d 00:00 UTC")


def test_two_worker_processes_stop_spending_at_the_budget_and_the_rest_run_once_when_it_is_raised(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, clean_env: pytest.MonkeyPatch
) -> None:
    with two_worker_processes(tmp_path, redis_url, redis_client) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(SAMPLES, topics=4), SKILLBOOK)

        status = settled(fleet, handle.batch_id)
        spent, steps = fleet.spend(), steps_of(fleet, handle.batch_id)
        # The budget stopped the batch: samples wait for it, none failed or was lost.
        assert status.failed == 0, fleet.log.read_text()
        assert status.waiting_for_budget > 0
        assert status.done + status.waiting_for_budget == SAMPLES
        # Two independent counts of the spend agree: the limiter's and the steps' own.
        assert spent.cost == pytest.approx(step_cost(steps), abs=1e-6)
        # Every call the limiter let through is a step run the batch counted: none was made and lost.
        assert spent.requests == sum(steps[name].done for name in LLM_STEPS if name in steps)
        assert spent.cost <= BUDGET_USD + one_call(steps)
        # Each refusal was of a call that did not fit: spent and reserved plus its estimate pass the budget.
        refusals = fleet.deferrals.refusals(TENANT)
        assert refusals and all(r.spent + r.requested > BUDGET_USD for r in refusals), refusals

        # Not raised, the day not over: beat's tick sends nothing on (no release churn), no call is made.
        waiting = status.waiting_for_budget
        assert reconcile_running(service.dispatcher).released == 0
        assert release_deferred(service.dispatcher, TENANT) == 0
        assert fleet.deferrals.count(TENANT) == waiting
        assert fleet.spend().requests == spent.requests
        assert fleet.log.read_text().count("waits for budget") == waiting  # each refused and parked once

        clean_env.setenv("ACE_REDIS_URL", redis_url)
        clean_env.setenv("ACE_QUEUE_PREFIX", service.runtime.settings.queue_prefix)
        raised = CliRunner().invoke(
            cli, ["tenant", "set", TENANT, "--budget", f"{ALL_MODELS}:cost_per_day=1000", "--json"]
        )
        assert raised.exit_code == 0, raised.output
        assert json.loads(raised.stdout)["released"] == waiting

        final = handle.wait(timeout=TIMEOUT)
        # None refused again by a worker that had not yet seen the raise (its tenants are cached).
        parks = fleet.log.read_text().count("waits for budget")
        steps, spent = steps_of(fleet, handle.batch_id), fleet.spend()
        records = service.runtime.batches.records(handle.batch_id)
        history = service.runtime.store(SKILLBOOK).history(limit=1000)

    assert (final.done, final.failed, final.waiting_for_budget) == (SAMPLES, 0, 0), fleet.log.read_text()
    assert parks == waiting
    assert sorted(records) == sorted(f"e1:{i}" for i in range(1, SAMPLES + 1))
    assert all(record["outcome"] == "done" and not record.get("retried") for record in records.values())
    applies = Counter(
        change.source["sample"]
        for change in history
        if change.kind is ChangeKind.APPLY and change.source and change.source.get("batch") == handle.batch_id
    )
    assert applies and max(applies.values()) == 1, applies
    assert {name: stats.done for name, stats in steps.items()} == dict.fromkeys(steps, SAMPLES)
    assert len(steps) == 4
    # Each sample's two calls made once, across the stop and the resume.
    assert spent.requests == 2 * SAMPLES
    assert spent.cost == pytest.approx(step_cost(steps), abs=1e-6)


def test_a_hard_cap_fails_the_samples_past_the_budget_naming_tenant_model_limit_and_reset(
    redis_url: str, clean_env: pytest.MonkeyPatch
) -> None:
    with running_service(redis_url, learn_threads=4, sim_cost_per_1k_tokens=COST_PER_1K) as service:
        runtime = service.runtime
        clean_env.setenv("ACE_REDIS_URL", redis_url)
        clean_env.setenv("ACE_QUEUE_PREFIX", runtime.settings.queue_prefix)
        added = CliRunner().invoke(
            cli,
            [
                "tenant",
                "add",
                TENANT,
                "--prefix",
                "a-",
                "--budget",
                f"{ALL_MODELS}:cost_per_day={BUDGET_USD}",
                "--on-budget",
                "fail",
            ],
        )
        assert added.exit_code == 0, added.output
        before = reset_text()
        handle = service.producer.enqueue_traces(failure_traces(8, topics=4), SKILLBOOK)
        final = handle.wait(timeout=TIMEOUT)
        resets = {before, reset_text()}  # the same but when the test ran across midnight UTC
        errors = runtime.batches.errors(handle.batch_id)
        letters = read_dead_letters(runtime)
        spent = runtime.limiter.usage(TENANT).window(ALL_MODELS, "day")
        steps = {stats.name: stats for stats in runtime.batches.step_stats(handle.batch_id)}
        parked = DeferredSamples(runtime.redis, prefix=runtime.settings.queue_prefix).count(TENANT)

    assert final.failed > 0 and final.done + final.failed == 8
    assert final.waiting_for_budget == 0 and parked == 0
    assert len(errors) == final.failed and len(letters) == final.failed
    for error in errors:
        assert error["step"] in LLM_STEPS
        message = error["error"]
        assert message.startswith(f"BudgetExhaustedError: tenant {TENANT!r}: budget cost_per_day"), message
        assert f"model {ALL_MODELS!r}" in message and f" of {BUDGET_USD:g} " in message
        assert any(f"resets at {moment}" in message for moment in resets), message
    assert spent is not None and spent.reserved_cost == 0
    assert spent.cost == pytest.approx(step_cost(steps), abs=1e-6)
    assert spent.cost <= BUDGET_USD + one_call(steps)
