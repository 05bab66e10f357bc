"""A sample whose tenant's budget is spent waits (deferred, not failed), and runs on once when it has room."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app as cli
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchStatus
from ace_workers.distributed.store.changelog import ChangeKind
from ace_workers.distributed.store.keys import deferred_key
from ace_workers.distributed.tenancy.deferred_samples import DeferredSamples
from ace_workers.distributed.tenancy.errors import BudgetExhaustedError
from ace_workers.distributed.tenancy.tenants import Budget, Tenant, TenantRegistry
from ace_workers.distributed.worker.chains import sample_chain
from ace_workers.distributed.worker.dead_letters import read_dead_letters
from ace_workers.distributed.worker.deferrals import release_deferred
from ace_workers.distributed.worker.reconcile import lost_after_seconds, reconcile_batch, reconcile_running
from ace_workers.sim import failure_traces
from tests.support.budget_llm import UNITS, FakeBudget, budget_model
from tests.support.console import running_console
from tests.support.processes import REPO, start_worker, stop, wait_until_served
from tests.support.recipes import TEST_RECIPES
from tests.support.schema0 import stamp_current_schema
from tests.support.waiting import wait_for
from tests.support.workers import build_test_service, running_service

pytestmark = pytest.mark.slow

TIMEOUT = 60
FACTORY = "tests.support.budget_llm:budgeted_llm"
TENANT = "team-a"
SKILLBOOK = "a-book"
UPDATE_STEP = 2  # trace_analyser: Reflect, Tag, Update (the SkillManager's call, the budgeted one), Apply
STATES = ("done", "failed", "running", "queued", "waiting_for_budget", "cancelled")


@dataclass
class Fleet:
    """Workers whose SkillManager spends tenant ``team-a``'s fake budget, and that budget."""

    service: Service
    registry: TenantRegistry
    budget: FakeBudget

    def raise_budget(self, units: int) -> None:
        """What ``ace-workers tenant set team-a`` does to the budget."""
        self.registry.update(TENANT, lambda tenant: tenant.with_budget(Budget(UNITS, tokens_per_day=units)))


@contextmanager
def budgeted_fleet(
    redis_url: str, client: redis.Redis, *, units: int, on_budget: str = "wait", **settings: Any
) -> Iterator[Fleet]:
    """In-process workers where tenant team-a owns ``a-*`` with ``units`` (LLM calls) to spend."""
    prefix = f"t{uuid.uuid4().hex[:8]}"
    stamp_current_schema(client, prefix)  # as this version's first process did
    registry = TenantRegistry(client, prefix=prefix)
    registry.add(
        Tenant(TENANT, prefixes=("a-",), budgets=(Budget(UNITS, tokens_per_day=units),), on_budget=on_budget)
    )
    options = {
        "queue_prefix": prefix,
        "llm_factory": FACTORY,
        "skill_manager_model": budget_model(redis_url, prefix, TENANT),
        **settings,
    }
    with running_service(redis_url, learn_threads=4, **options) as service:
        yield Fleet(service, registry, FakeBudget(client, prefix, TENANT))


def adds_up(status: BatchStatus) -> BatchStatus:
    """``status``, after checking that its six states add up to its total and none is negative."""
    counts = status.counts()
    assert sum(counts[state] for state in STATES) == status.total, counts
    assert all(counts[state] >= 0 for state in STATES), counts
    return status


def settled(fleet: Fleet, batch_id: str, *, done: int, waiting: int) -> BatchStatus:
    """Wait until ``done`` samples are done and ``waiting`` wait for budget, their steps parked."""
    runtime = fleet.service.runtime
    deferrals = DeferredSamples(runtime.redis, prefix=runtime.settings.queue_prefix)

    def check() -> BatchStatus | None:
        status = adds_up(runtime.batches.status(batch_id))
        counts = (status.done, status.waiting_for_budget, status.running, status.queued)
        # A sample is marked waiting a moment before its step is parked.
        return status if counts == (done, waiting, 0, 0) and deferrals.count(TENANT) == waiting else None

    return wait_for(check, TIMEOUT, f"{done} done and {waiting} waiting for budget")


def assert_each_sample_ran_once(fleet: Fleet, batch_id: str, samples: int) -> None:
    """Every sample's outcome recorded once, its budgeted call made once, its writes applied at most once."""
    runtime = fleet.service.runtime
    records = runtime.batches.records(batch_id)
    assert sorted(records) == sorted(f"e1:{i}" for i in range(1, samples + 1))
    assert all(record["outcome"] == "done" and not record.get("retried") for record in records.values())
    calls = fleet.budget.calls()
    assert calls == {f"{batch_id}|e1:{i}|UpdateStep": 1 for i in range(1, samples + 1)}
    applies = Counter(
        change.source["sample"]
        for change in runtime.store(SKILLBOOK).history(limit=1000)
        if change.kind is ChangeKind.APPLY and change.source and change.source.get("batch") == batch_id
    )
    assert applies and max(applies.values()) == 1, applies
    steps = {stats.name: stats for stats in runtime.batches.step_stats(batch_id)}
    assert (steps["UpdateStep"].done, steps["ApplyStep"].done) == (samples, samples)


def test_samples_wait_for_the_budget_and_run_on_once_when_it_is_raised(
    redis_url: str, redis_client: redis.Redis
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=3) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(8, topics=4), SKILLBOOK)

        status = settled(fleet, handle.batch_id, done=3, waiting=5)
        assert status.failed == 0
        assert "5 waiting for budget" in status.summary()
        assert status.to_dict()["waiting_for_budget"] == 5
        assert (
            DeferredSamples(service.runtime.redis, prefix=service.runtime.settings.queue_prefix).count(TENANT)
            == 5
        )
        # Long past the time a lost sample is sent again: a waiting sample is not lost.
        later = time.time() + lost_after_seconds(service.runtime.settings) + 60
        assert reconcile_batch(service.dispatcher, handle.batch_id, now=later).redriven == []
        # Nothing has room yet: beat's tick sends nothing on.
        assert reconcile_running(service.dispatcher).released == 0

        fleet.raise_budget(100)
        assert release_deferred(service.dispatcher, TENANT) == 5
        final = handle.wait(timeout=TIMEOUT)

        assert (final.done, final.failed, final.waiting_for_budget) == (8, 0, 0)
        assert_each_sample_ran_once(fleet, handle.batch_id, 8)
        assert fleet.budget.spent() == 8


def test_a_message_delivered_again_parks_once(redis_url: str, redis_client: redis.Redis) -> None:
    with budgeted_fleet(redis_url, redis_client, units=0) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(2), SKILLBOOK)
        settled(fleet, handle.batch_id, done=0, waiting=2)
        deferrals = DeferredSamples(service.runtime.redis, prefix=service.runtime.settings.queue_prefix)
        [entry, _] = sorted(deferrals.entries(TENANT), key=lambda entry: entry.field)
        # The same step message twice more, as a broker delivers a message whose worker died unacknowledged.
        for _ in range(2):
            chain = sample_chain(
                service.dispatcher,
                entry.payload,
                recipe="trace_analyser",
                skillbook=SKILLBOOK,
                batch_id=handle.batch_id,
                epoch=1,
                sample_index=entry.kwargs["sample_index"],
                start=UPDATE_STEP,
                tenant=entry.kwargs["tenant"],
            )
            service.dispatcher.send_chain(chain)
        wait_for(lambda: fleet.budget.refused() == 4, TIMEOUT, "both copies refused too")
        status = settled(fleet, handle.batch_id, done=0, waiting=2)
        assert (deferrals.count(TENANT), status.waiting_for_budget) == (2, 2)

        fleet.raise_budget(100)
        assert release_deferred(service.dispatcher) == 2
        assert handle.wait(timeout=TIMEOUT).done == 2
        assert_each_sample_ran_once(fleet, handle.batch_id, 2)


def test_two_releasers_racing_send_each_deferred_sample_once(
    redis_url: str, redis_client: redis.Redis
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=0) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(12, topics=4), SKILLBOOK)
        settled(fleet, handle.batch_id, done=0, waiting=12)
        fleet.raise_budget(100)

        start = threading.Barrier(2)
        sent: list[int] = []

        def releaser() -> None:
            start.wait()
            sent.append(release_deferred(service.dispatcher, TENANT))

        threads = [threading.Thread(target=releaser) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert sum(sent) == 12, sent
        assert handle.wait(timeout=TIMEOUT).done == 12
        assert_each_sample_ran_once(fleet, handle.batch_id, 12)


def test_a_sample_whose_releaser_died_after_the_claim_is_sent_again_by_the_reconciler(
    redis_url: str, redis_client: redis.Redis
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=0) as fleet:
        service, runtime = fleet.service, fleet.service.runtime
        handle = service.producer.enqueue_traces(failure_traces(2), SKILLBOOK)
        settled(fleet, handle.batch_id, done=0, waiting=2)
        deferrals = DeferredSamples(runtime.redis, prefix=runtime.settings.queue_prefix)
        lost = sorted(deferrals.entries(TENANT), key=lambda entry: entry.field)[0]
        assert deferrals.claim(TENANT, lost.field) is not None  # claimed, and the releaser died
        later = time.time() + lost_after_seconds(runtime.settings) + 60

        report = reconcile_batch(service.dispatcher, handle.batch_id, now=later)

        # The claimed one only: the other still waits, parked.
        assert report.redriven == [f"{handle.batch_id}:e1:{lost.kwargs['sample_index']}"]
        # Sent again into a budget still spent, it waits again, parked beside the other (waited for:
        # raising the budget while it runs would release one or two by timing).
        settled(fleet, handle.batch_id, done=0, waiting=2)
        fleet.raise_budget(100)
        assert release_deferred(service.dispatcher) == 2
        final = handle.wait(timeout=TIMEOUT)
        assert (final.done, final.failed, final.waiting_for_budget) == (2, 0, 0)


def test_a_tenant_that_asked_to_fail_has_its_samples_failed_with_the_reason(
    redis_url: str, redis_client: redis.Redis
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=1, on_budget="fail") as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(3), SKILLBOOK)
        final = adds_up(handle.wait(timeout=TIMEOUT))

        assert (final.done, final.failed, final.waiting_for_budget) == (1, 2, 0)
        for error in service.runtime.batches.errors(handle.batch_id):
            assert error["step"] == "UpdateStep"
            message = error["error"]
            assert message.startswith("BudgetExhaustedError: tenant 'team-a': budget tokens_per_day")
            assert f"model {UNITS!r}" in message and "resets at" in message and "UTC" in message
        letters = read_dead_letters(service.runtime)
        assert len(letters) == 2
        assert all("tokens_per_day" in str(letter.letter["error"]) for letter in letters if letter.letter)
        assert (
            DeferredSamples(service.runtime.redis, prefix=service.runtime.settings.queue_prefix).count(TENANT)
            == 0
        )


def test_status_and_the_console_show_the_samples_waiting_for_budget(
    redis_url: str, redis_client: redis.Redis, clean_env: pytest.MonkeyPatch
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=1) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(4), SKILLBOOK)
        settled(fleet, handle.batch_id, done=1, waiting=3)
        clean_env.setenv("ACE_REDIS_URL", redis_url)
        clean_env.setenv("ACE_QUEUE_PREFIX", service.runtime.settings.queue_prefix)
        clean_env.setenv("ACE_RECIPES", TEST_RECIPES)
        runner = CliRunner()

        said = runner.invoke(cli, ["status", handle.batch_id])
        document = runner.invoke(cli, ["status", handle.batch_id, "--json"])
        with running_console(service) as console, console.client() as client:
            page = client.get(f"/batches/{handle.batch_id}").text
            shown = client.get(f"/api/batches/{handle.batch_id}").json()

    assert said.exit_code == 0, said.output
    assert "1 done, 0 failed, 0 running, 0 queued, 3 waiting for budget of 4" in " ".join(said.output.split())
    assert json.loads(document.stdout)["waiting_for_budget"] == 3
    assert 'data-count="waiting_for_budget"' in page and "Waiting for budget" in page
    assert shown["status"]["waiting_for_budget"] == 3


def test_two_worker_processes_share_the_budget_and_every_deferred_sample_runs_on_once(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    stamp_current_schema(redis_client, prefix)  # as this version's first process did
    registry = TenantRegistry(redis_client, prefix=prefix)
    registry.add(Tenant(TENANT, prefixes=("a-",), budgets=(Budget(UNITS, tokens_per_day=4),)))
    values = {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": prefix,
        "ACE_SIM_TRUST_THRESHOLD": "0",
        "ACE_LLM_FACTORY": FACTORY,
        "ACE_SKILL_MANAGER_MODEL": budget_model(redis_url, prefix, TENANT),
    }
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        **values,
    }
    service = build_service(WorkerSettings.from_env(values), redis_url=redis_url)
    fleet = Fleet(service, registry, FakeBudget(redis_client, prefix, TENANT))
    log = tmp_path / "workers.log"
    # Two processes make the budgeted calls (the SkillManager's, on the learn queue); one writes.
    workers = [
        start_worker(env, log, queues="execute,learn", concurrency=2, hostname=f"w{n}@%h") for n in (1, 2)
    ]
    workers.append(start_worker(env, log, queues="write", concurrency=1, hostname="writer@%h"))
    try:
        wait_until_served(service, ("execute", "learn", "write"))
        handle = service.producer.enqueue_traces(failure_traces(10, topics=5), SKILLBOOK)
        settled(fleet, handle.batch_id, done=4, waiting=6)
        assert fleet.budget.spent() == 4  # not one call past the budget, across both processes

        fleet.raise_budget(10)
        assert release_deferred(service.dispatcher) == 6
        final = handle.wait(timeout=TIMEOUT)
    finally:
        stop(*workers)
        service.close()

    assert (final.done, final.failed, final.waiting_for_budget) == (10, 0, 0), log.read_text()
    assert_each_sample_ran_once(fleet, handle.batch_id, 10)


def test_tenant_set_raising_the_budget_sends_the_waiting_samples_on(
    redis_url: str, redis_client: redis.Redis, clean_env: pytest.MonkeyPatch
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=0) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(3), SKILLBOOK)
        settled(fleet, handle.batch_id, done=0, waiting=3)
        clean_env.setenv("ACE_REDIS_URL", redis_url)
        clean_env.setenv("ACE_QUEUE_PREFIX", service.runtime.settings.queue_prefix)
        clean_env.setenv("ACE_RECIPES", TEST_RECIPES)

        changed = CliRunner().invoke(
            cli, ["tenant", "set", TENANT, "--budget", f"{UNITS}:tokens_per_day=100", "--json"]
        )

        assert changed.exit_code == 0, changed.output
        assert json.loads(changed.stdout)["released"] == 3
        assert handle.wait(timeout=TIMEOUT).done == 3
        assert_each_sample_ran_once(fleet, handle.batch_id, 3)


def test_beats_reconciler_sends_the_waiting_samples_on_once_the_budget_has_room(
    redis_url: str, redis_client: redis.Redis
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=0) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(2), SKILLBOOK)
        settled(fleet, handle.batch_id, done=0, waiting=2)
        assert reconcile_running(service.dispatcher).released == 0

        fleet.raise_budget(100)  # as a reset would: the budget has room again
        assert reconcile_running(service.dispatcher).released == 2
        assert handle.wait(timeout=TIMEOUT).done == 2
        assert reconcile_running(service.dispatcher).released == 0
        assert_each_sample_ran_once(fleet, handle.batch_id, 2)


def test_a_parked_entry_that_cannot_be_sent_again_becomes_a_dead_letter_naming_its_problem(
    redis_url: str, redis_client: redis.Redis
) -> None:
    service = build_test_service(redis_url, llm_factory=FACTORY)
    try:
        runtime = service.runtime
        prefix = runtime.settings.queue_prefix
        deferrals = DeferredSamples(runtime.redis, prefix=prefix)
        exc = BudgetExhaustedError(TENANT, "m", "cost_per_day", spent=1, budget=1, resets_at=time.time() - 1)
        kwargs = {
            "recipe": "trace_analyser",
            "skillbook": SKILLBOOK,
            "index": UPDATE_STEP,
            "batch_id": "gone",
            "epoch": 1,
            "sample_index": 1,
        }
        assert deferrals.park(exc, task_id=None, step="UpdateStep", kwargs=kwargs, payload={"trace": {}})
        # Written by someone else: not JSON, under a field that names a sample.
        redis_client.hset(deferred_key(prefix, TENANT), "other|e1:2|2", "{not json")
        redis_client.zadd(deferred_key(prefix, TENANT, "order"), {"other|e1:2|2": time.time()})

        assert release_deferred(service.dispatcher, TENANT) == 0

        assert deferrals.count(TENANT) == 0
        errors = sorted(str((letter.letter or {}).get("error")) for letter in read_dead_letters(runtime))
        assert len(errors) == 2
        assert (
            "deferred step 'gone|e1:1|2' of tenant 'team-a'" in errors[0] and "no batch 'gone'" in errors[0]
        )
        assert "deferred step 'other|e1:2|2' of tenant 'team-a'" in errors[1] and "not JSON" in errors[1]
    finally:
        service.close()


def test_a_waiting_producer_sends_the_samples_on_when_the_budget_window_resets(
    redis_url: str, redis_client: redis.Redis
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=1, reconcile_interval_seconds=0.2) as fleet:
        fleet.budget.set_window(4)  # the fake's budget window: 4 s instead of a UTC day
        handle = fleet.service.producer.enqueue_traces(failure_traces(3), SKILLBOOK)
        settled(fleet, handle.batch_id, done=1, waiting=2)

        # No raise and no beat: the producer's reconciler sees the window the refusals named end.
        final = handle.wait(timeout=TIMEOUT)

        assert (final.done, final.failed, final.waiting_for_budget) == (3, 0, 0)
        assert_each_sample_ran_once(fleet, handle.batch_id, 3)
        assert fleet.budget.refused() >= 2


def test_samples_waiting_for_budget_hold_no_admission_slot(redis_url: str, redis_client: redis.Redis) -> None:
    # A window of 4: were parked samples to keep their slots, 4 of them would stop the batch's others.
    with budgeted_fleet(redis_url, redis_client, units=2, admission_window=4) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(10, topics=4), SKILLBOOK)

        settled(fleet, handle.batch_id, done=2, waiting=8)
        assert service.runtime.admission.in_flight() == {TENANT: 0}

        fleet.raise_budget(100)
        assert release_deferred(service.dispatcher, TENANT) == 8
        final = handle.wait(timeout=TIMEOUT)
        assert (final.done, final.failed, final.waiting_for_budget) == (10, 0, 0)
        assert_each_sample_ran_once(fleet, handle.batch_id, 10)


def point_cli_at(env: pytest.MonkeyPatch, redis_url: str, service: Service) -> None:
    """The CLI of this process on the fleet of ``service``."""
    env.setenv("ACE_REDIS_URL", redis_url)
    env.setenv("ACE_QUEUE_PREFIX", service.runtime.settings.queue_prefix)
    env.setenv("ACE_RECIPES", TEST_RECIPES)


def test_tenant_remove_fails_the_waiting_samples_so_that_dead_letters_retry_finishes_them(
    redis_url: str, redis_client: redis.Redis, clean_env: pytest.MonkeyPatch
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=0) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(3), SKILLBOOK)
        settled(fleet, handle.batch_id, done=0, waiting=3)
        point_cli_at(clean_env, redis_url, service)

        refused = CliRunner().invoke(cli, ["tenant", "remove", TENANT])
        assert refused.exit_code == 4, refused.output
        assert "has 3 samples waiting for budget" in " ".join(refused.output.split())
        assert fleet.registry.tenant_of(SKILLBOOK) == TENANT

        removed = CliRunner().invoke(cli, ["tenant", "remove", TENANT, "--fail-waiting", "--json"])
        assert removed.exit_code == 0, removed.output
        assert json.loads(removed.stdout) == {"name": TENANT, "removed": True, "failed_waiting": 3}
        assert fleet.registry.tenant_of(SKILLBOOK) == "default"
        failed = handle.wait(timeout=TIMEOUT)
        assert (failed.done, failed.failed, failed.waiting_for_budget) == (0, 3, 0)
        letters = read_dead_letters(service.runtime)
        assert len(letters) == 3
        assert all("was removed while this sample waited" in letter.letter["error"] for letter in letters)  # type: ignore[index]

        retried = CliRunner().invoke(cli, ["dead-letters", "retry"])
        assert retried.exit_code == 0, retried.output
        assert "3 messages sent back" in retried.output
        finished = wait_for(
            lambda: (status := service.runtime.batches.status(handle.batch_id)).done == 3 and status,
            TIMEOUT,
            "the retried samples to finish",
        )
        assert finished.failed == 0
        assert read_dead_letters(service.runtime) == []  # none refused as a tenant that is gone


def removal_reports_waiting(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An event set when ``tenant remove --drain`` first prints what it waits for."""
    from ace_workers.cli import tenant as tenant_cli

    reported = threading.Event()
    printer_of = tenant_cli._progress_printer

    def printer_that_tells() -> Any:
        show = printer_of()

        def show_and_tell(work: Any) -> None:
            show(work)
            reported.set()

        return show_and_tell

    monkeypatch.setattr(tenant_cli, "_progress_printer", printer_that_tells)
    return reported


def test_tenant_remove_drain_waits_until_none_of_its_samples_waits_then_removes_it(
    redis_url: str, redis_client: redis.Redis, clean_env: pytest.MonkeyPatch
) -> None:
    with budgeted_fleet(redis_url, redis_client, units=0) as fleet:
        service = fleet.service
        handle = service.producer.enqueue_traces(failure_traces(2), SKILLBOOK)
        settled(fleet, handle.batch_id, done=0, waiting=2)
        point_cli_at(clean_env, redis_url, service)
        waiting = removal_reports_waiting(clean_env)

        def budget_raised_meanwhile() -> None:
            # Only once the removal has said it waits: a loaded machine may take seconds to get there.
            assert waiting.wait(TIMEOUT), "the removal never said it was waiting"
            fleet.raise_budget(100)
            release_deferred(service.dispatcher, TENANT)

        raiser = threading.Thread(target=budget_raised_meanwhile)
        raiser.start()
        drained = CliRunner().invoke(cli, ["tenant", "remove", TENANT, "--drain"])
        raiser.join()
        said = " ".join(drained.output.split())
        assert drained.exit_code == 0, said
        assert (
            f"tenant {TENANT}: 2 samples waiting for budget, 0 running or queued; waiting until none" in said
        )
        assert f"tenant {TENANT} removed" in said
        assert handle.wait(timeout=TIMEOUT).done == 2  # finished as team-a, before it went
        assert fleet.registry.tenant_of(SKILLBOOK) == "default"
        assert read_dead_letters(service.runtime) == []
