"""The fleet's LLM limiter on real workers: each skillbook's roles pass it as their tenant, budgets hold."""

from __future__ import annotations

import redis

from ace_workers.distributed.tenancy import Budget, Tenant, TenantRegistry
from ace_workers.providers.call_gate import GatedClient
from ace_workers.sim import SimulatedLLM, failure_traces
from tests.support.workers import running_service

BUDGET_USD = 5.0


def test_a_tenants_cost_budget_stops_the_fleets_spending_at_the_limit(
    redis_client: redis.Redis, redis_url: str
) -> None:
    # The simulator prices each 1000 tokens at 1 USD: a Reflect or Update call costs about half a dollar.
    with running_service(redis_url, learn_threads=4, sim_cost_per_1k_tokens=1.0) as service:
        prefix = service.runtime.settings.queue_prefix
        budget = Budget("*", cost_per_day=BUDGET_USD)
        TenantRegistry(redis_client, prefix=prefix).add(
            Tenant("acme", prefixes=("acme-",), budgets=(budget,), on_budget="fail")
        )
        limited = service.producer.enqueue_traces(failure_traces(20), "acme-support")
        free = service.producer.enqueue_traces(failure_traces(5), "other")
        status, other = limited.wait(timeout=120), free.wait(timeout=120)
        usage = service.runtime.limiter.usage("acme").window("*", "day")
    assert (other.done, other.failed) == (5, 0)  # another tenant's skillbook is not held back
    assert status.done + status.failed == 20 and status.failed > 0
    assert usage is not None and usage.reserved_cost == 0
    # Estimates count the completion's default allowance, above what a simulated reply uses, so
    # the fleet stops before the budget: never past it.
    assert BUDGET_USD / 2 < usage.cost <= BUDGET_USD


def test_roles_get_gated_clients_and_runtime_llm_stays_the_plain_client(redis_url: str) -> None:
    with running_service(redis_url) as service:
        runtime = service.runtime
        assert isinstance(runtime.llm("sim"), SimulatedLLM)
        gated = runtime.reflector("support").llm  # type: ignore[attr-defined]
        assert isinstance(gated, GatedClient) and gated.llm is runtime.llm("sim")
        assert gated.gate.skillbook == "support"  # type: ignore[attr-defined]


def test_a_fleet_with_limits_configured_but_not_reached_learns_everything(redis_url: str) -> None:
    with running_service(redis_url, model_limits="sim=rpm:100000,tpm:100000000") as service:
        handle = service.producer.enqueue_traces(failure_traces(10), "support")
        status = handle.wait(timeout=60)
        usage = service.runtime.limiter.usage("default").window("sim", "day")
    assert (status.done, status.failed) == (10, 0)
    assert (
        usage is not None and usage.requests == 20
    )  # Reflect and Update of each sample, through the limiter
