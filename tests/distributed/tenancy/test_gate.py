"""The limiter as an LLM client's gate: calls count against the skillbook's tenant; free if nothing limits."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from ace_workers.distributed.tenancy import (
    ALL_MODELS,
    Budget,
    BudgetExhaustedError,
    CachedTenants,
    Tenant,
    TenantRegistry,
)
from ace_workers.distributed.tenancy.limiter import Limiter
from ace_workers.distributed.tenancy.limiter_gate import (
    DEFAULT_COMPLETION_TOKENS,
    CompletionSizes,
    LimiterGate,
    estimate_tokens,
    priced_model,
)
from ace_workers.distributed.tenancy.model_limits import parse_model_limits
from ace_workers.errors import LLMError
from ace_workers.providers.call_gate import GatedClient
from ace_workers.sim import SimulatedLLM

PREFIX = "gt"
PROMPT = "x" * 400  # about 100 tokens


class CountingRedis(redis.Redis):
    """A client that counts the commands it sends (scripts included)."""

    sent = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        type(self).sent += 1
        return super().execute_command(*args, **options)


@pytest.fixture
def counting(redis_client: redis.Redis, redis_url: str) -> redis.Redis:
    CountingRedis.sent = 0
    return CountingRedis.from_url(redis_url)


@pytest.fixture
def registry(redis_client: redis.Redis) -> TenantRegistry:
    return TenantRegistry(redis_client, prefix=PREFIX)


def gated_sim(
    client: redis.Redis,
    registry: TenantRegistry,
    *,
    limits: str = "",
    cost: float = 0.0,
    tenants_age: float = 0.0,
    **sim: Any,
) -> tuple[GatedClient, Limiter]:
    limiter = Limiter(client, prefix=PREFIX, model_limits=parse_model_limits(limits))
    tenants = CachedTenants(TenantRegistry(client, prefix=PREFIX), max_age_seconds=tenants_age)
    gate = LimiterGate(limiter, tenants, "acme-support", pricing=priced_model("sim", cost))
    return GatedClient(SimulatedLLM(cost_per_1k_tokens=cost, **sim), gate, "sim"), limiter


def test_the_estimate_is_a_quarter_token_a_character_plus_the_completion_allowed() -> None:
    assert estimate_tokens(PROMPT, 50) == (100, 50)
    messages = [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 80}]
    assert estimate_tokens(messages, None) == (30, DEFAULT_COMPLETION_TOKENS)


def test_a_completions_estimate_follows_what_the_model_produced_with_a_margin() -> None:
    sizes = CompletionSizes()
    assert sizes.estimate("sim", None) == DEFAULT_COMPLETION_TOKENS  # nothing seen yet
    assert sizes.estimate("sim", 200) == 200
    sizes.observe("sim", 300)
    assert sizes.estimate("sim", None) == 375  # 300 and a quarter more
    assert sizes.estimate("sim", 200) == 200  # never above what the call allows
    assert sizes.estimate("other", None) == DEFAULT_COMPLETION_TOKENS


def test_a_budgeted_calls_reservation_shrinks_once_its_completions_were_seen(
    redis_client: redis.Redis, registry: TenantRegistry
) -> None:
    registry.add(Tenant("acme", prefixes=("acme-",), budgets=(Budget(ALL_MODELS, tokens_per_day=10**9),)))
    llm, limiter = gated_sim(redis_client, registry)
    gate = llm.gate
    assert isinstance(gate, LimiterGate)
    first = gate.before("sim", PROMPT, None)
    assert first.reservation is not None
    assert first.reservation.tokens == 100 + DEFAULT_COMPLETION_TOKENS
    gate.after(first, {"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140}, None)
    second = gate.before("sim", PROMPT, None)
    assert second.reservation is not None
    assert second.reservation.tokens == 100 + 50
    limiter.release(second.reservation)


def test_a_call_with_nothing_configured_sends_nothing_to_redis(
    counting: redis.Redis, registry: TenantRegistry
) -> None:
    llm, _ = gated_sim(counting, registry, tenants_age=60)
    llm.complete(PROMPT)  # reads the tenants and the slowed models once
    sent = CountingRedis.sent
    for _ in range(20):
        llm.complete(PROMPT)
    assert CountingRedis.sent == sent
    assert llm.llm.call_count() == 21


def test_a_call_to_a_limited_model_costs_two_round_trips(
    counting: redis.Redis, registry: TenantRegistry
) -> None:
    llm, _ = gated_sim(counting, registry, limits="sim=rpm:100000", tenants_age=60)
    llm.complete(PROMPT)
    sent = CountingRedis.sent
    for _ in range(10):
        llm.complete(PROMPT)
    assert CountingRedis.sent - sent == 20  # reserve and settle: one script call each


def test_a_budgeted_call_reserves_and_settles_with_the_simulators_usage_and_cost(
    redis_client: redis.Redis, registry: TenantRegistry
) -> None:
    registry.add(Tenant("acme", prefixes=("acme-",), budgets=(Budget("sim", cost_per_day=10.0),)))
    llm, limiter = gated_sim(redis_client, registry, cost=0.5)
    reply = llm.complete(PROMPT)
    usage = limiter.usage("acme").window("sim", "day")
    assert usage is not None
    assert usage.tokens == reply.raw["usage"]["total_tokens"]
    assert usage.cost == pytest.approx(reply.raw["cost"])
    assert (usage.requests, usage.reserved_tokens, usage.reserved_cost) == (1, 0, 0)


def test_a_spent_budget_refuses_the_call_before_the_llm_is_asked(
    redis_client: redis.Redis, registry: TenantRegistry
) -> None:
    registry.add(Tenant("acme", prefixes=("acme-",), budgets=(Budget("*", tokens_per_day=200),)))
    llm, _ = gated_sim(redis_client, registry)
    llm.complete(PROMPT)  # the first call of the day goes through: ~100 + 1024 estimated
    with pytest.raises(BudgetExhaustedError) as refused:
        llm.complete(PROMPT)
    assert (refused.value.tenant, refused.value.limit) == ("acme", "tokens_per_day")
    assert llm.llm.call_count() == 1


def test_a_tenant_change_is_seen_by_the_next_call(
    redis_client: redis.Redis, registry: TenantRegistry
) -> None:
    registry.add(Tenant("acme", prefixes=("acme-",), budgets=(Budget("*", tokens_per_day=10),)))
    llm, _ = gated_sim(redis_client, registry)
    llm.complete(PROMPT)
    with pytest.raises(BudgetExhaustedError):
        llm.complete(PROMPT)
    registry.update("acme", lambda t: t.with_budget(Budget("*", tokens_per_day=1_000_000)))
    llm.complete(PROMPT)
    assert llm.llm.call_count() == 2


def test_a_refusal_looks_again_at_tenants_older_than_a_raise(
    redis_client: redis.Redis, registry: TenantRegistry
) -> None:
    # Tenants cached for a minute, as a worker caches them between looks: a raise is not seen yet.
    registry.add(Tenant("acme", prefixes=("acme-",), budgets=(Budget("*", tokens_per_day=10),)))
    llm, _ = gated_sim(redis_client, registry, tenants_age=60)
    llm.complete(PROMPT)
    with pytest.raises(BudgetExhaustedError):  # unchanged: refused after the look all the same
        llm.complete(PROMPT)
    registry.update("acme", lambda t: t.with_budget(Budget("*", tokens_per_day=1_000_000)))

    llm.complete(PROMPT)  # refused by the cached budget, then let through by the raised one

    assert llm.llm.call_count() == 2


def test_a_simulated_429_slows_the_model_for_the_fleet(
    redis_client: redis.Redis, registry: TenantRegistry
) -> None:
    llm, limiter = gated_sim(redis_client, registry, failure_rate=1.0, failure="rate_limit")
    with pytest.raises(LLMError, match="429"):
        llm.complete(PROMPT)
    assert redis_client.hexists(limiter.keys.throttled, "sim")
    other = Limiter(redis_client, prefix=PREFIX)  # another worker process
    assert other.applies(Tenant("acme"), "sim")


def test_a_failed_call_frees_its_reservation(redis_client: redis.Redis, registry: TenantRegistry) -> None:
    registry.add(Tenant("acme", prefixes=("acme-",), budgets=(Budget("*", tokens_per_day=100_000),)))
    llm, limiter = gated_sim(redis_client, registry, failure_rate=1.0, failure="error")
    with pytest.raises(LLMError):
        llm.complete(PROMPT)
    usage = limiter.usage("acme").window("*", "day")
    assert usage is not None and (usage.tokens, usage.requests, usage.reserved_tokens) == (0, 1, 0)
