"""When a spent budget has room again, what each tenant spent against its budgets, and the tenant gauges."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app as cli
from ace_workers.distributed.tenancy.budget_watch import LimiterBudgetWatch, ParkedBudgetWatch
from ace_workers.distributed.tenancy.deferred_samples import DeferredSamples
from ace_workers.distributed.tenancy.errors import BudgetExhaustedError
from ace_workers.distributed.tenancy.limiter import (
    Limiter,
    Reservation,
    TenantUsage,
    WindowUsage,
    window_periods,
)
from ace_workers.distributed.tenancy.tenants import Budget, Tenant, TenantRegistry
from ace_workers.distributed.tenancy.usage import usage_report
from ace_workers.distributed.worker.tenant_metrics import TenantCollector
from ace_workers.observability.metrics import WorkerMetrics
from tests.support.schema0 import stamp_current_schema

MODEL = "openai/gpt-4o-mini"
NOW = 1_800_000_000.0  # 2027-01-15 08:00 UTC


def spent(model: str, window: str, tokens: int, cost: float, requests: int, resets_at: float) -> WindowUsage:
    """A spend window as the fleet's limiter reports it, with nothing reserved."""
    return WindowUsage(model, window, "period", tokens, cost, requests, 0.0, 0.0, resets_at)


class FixedUsage:
    """A usage source that reports the same spend for every tenant."""

    def __init__(self, *windows: WindowUsage) -> None:
        self.windows = windows

    def usage(self, tenant: str) -> TenantUsage:
        return TenantUsage(tenant, self.windows)


class Room:
    """A limiter's room check that answers from a set of models with room."""

    def __init__(self, roomy: set[str]) -> None:
        self.roomy = roomy
        self.asked: list[tuple[str, str | None]] = []

    def has_room(
        self, tenant: Tenant, model: str | None = None, needs: Mapping[str, float] | None = None
    ) -> bool:
        self.asked.append((tenant.name, model))
        return model in self.roomy


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def refused(
    tenant: str = "team-a", *, spent: float = 100, budget: float = 100, resets_at: float
) -> BudgetExhaustedError:
    """What the limiter raises for a spent tokens_per_day budget of ``MODEL``."""
    return BudgetExhaustedError(
        tenant, MODEL, "tokens_per_day", spent=spent, budget=budget, resets_at=resets_at
    )


def park(deferrals: DeferredSamples, exc: BudgetExhaustedError, sample: int) -> bool:
    kwargs = {
        "recipe": "r",
        "skillbook": "a-book",
        "index": 2,
        "batch_id": "b1",
        "epoch": 1,
        "sample_index": sample,
    }
    return deferrals.park(exc, task_id=None, step="UpdateStep", kwargs=kwargs, payload={"sample": sample})


def test_a_spent_budget_has_room_once_its_window_reset_or_it_was_raised(
    redis_client: redis.Redis, prefix: str
) -> None:
    registry = TenantRegistry(redis_client, prefix=prefix)
    registry.add(Tenant("team-a", budgets=(Budget(MODEL, tokens_per_day=100),)))
    deferrals = DeferredSamples(redis_client, prefix=prefix)
    assert park(deferrals, refused(resets_at=NOW + 3600), 1)
    assert not park(deferrals, refused(resets_at=NOW + 3600), 1)  # the same step again parks once
    assert deferrals.count("team-a") == 1
    clock = [NOW]
    watch = ParkedBudgetWatch(deferrals, registry.map, clock=lambda: clock[0])

    assert not watch.has_room("team-a")
    clock[0] = NOW + 3600  # the window reset
    assert watch.has_room("team-a")

    clock[0] = NOW
    assert park(deferrals, refused(resets_at=NOW + 3600), 2)
    assert not watch.has_room("team-a")
    registry.update("team-a", lambda t: t.with_budget(Budget(MODEL, tokens_per_day=100)))  # not raised
    assert not watch.has_room("team-a")
    registry.update("team-a", lambda t: t.with_budget(Budget(MODEL, tokens_per_day=150)))
    assert watch.has_room("team-a")


def test_the_limiters_room_is_asked_for_each_model_a_call_was_refused_for(
    redis_client: redis.Redis, prefix: str
) -> None:
    registry = TenantRegistry(redis_client, prefix=prefix)
    registry.add(Tenant("team-a"))
    deferrals = DeferredSamples(redis_client, prefix=prefix)
    park(deferrals, refused(resets_at=NOW + 3600), 1)
    room = Room(roomy=set())

    assert not LimiterBudgetWatch(room, deferrals, registry.map).has_room("team-a")
    room.roomy.add(MODEL)
    assert LimiterBudgetWatch(room, deferrals, registry.map).has_room("team-a")
    assert room.asked == [("team-a", MODEL), ("team-a", MODEL)]


def test_a_call_refused_because_its_estimate_did_not_fit_is_not_released_until_it_fits(
    redis_client: redis.Redis, prefix: str
) -> None:
    registry = TenantRegistry(redis_client, prefix=prefix)
    registry.add(Tenant("team-a", budgets=(Budget("*", cost_per_day=3.0),)))
    limiter = Limiter(redis_client, prefix=prefix)
    tenant = registry.map().get("team-a")
    granted = limiter.reserve(tenant, MODEL, 1000, 1.5)
    assert isinstance(granted, Reservation)
    limiter.settle(granted, 1000, 2.0)
    with pytest.raises(BudgetExhaustedError) as refusal:
        limiter.reserve(tenant, MODEL, 1000, 1.5)
    deferrals = DeferredSamples(redis_client, prefix=prefix)
    park(deferrals, refusal.value, 1)
    watch = LimiterBudgetWatch(limiter, deferrals, registry.map)
    parked = ParkedBudgetWatch(deferrals, registry.map)

    # 2 of 3 spent, under the budget; but sent on, the refused call (1.5) would be refused and parked again.
    assert not watch.has_room("team-a")
    assert not parked.has_room("team-a")
    registry.update("team-a", lambda t: t.with_budget(Budget("*", cost_per_day=3.2)))  # not enough for it
    assert not watch.has_room("team-a")
    assert not parked.has_room("team-a")
    registry.update("team-a", lambda t: t.with_budget(Budget("*", cost_per_day=3.5)))
    assert watch.has_room("team-a")


def test_the_usage_report_sets_spend_against_each_budget_window(
    redis_client: redis.Redis, prefix: str
) -> None:
    registry = TenantRegistry(redis_client, prefix=prefix)
    budgets = (Budget(tokens_per_day=1000, cost_per_month=10.0), Budget(MODEL, tokens_per_month=50_000))
    registry.add(Tenant("team-a", prefixes=("a-",), budgets=budgets, on_budget="fail"))
    deferrals = DeferredSamples(redis_client, prefix=prefix)
    park(deferrals, refused(resets_at=NOW + 60), 1)
    park(deferrals, refused(resets_at=NOW + 60), 2)
    day_end, month_end = window_periods(NOW)["day"][1], window_periods(NOW)["month"][1]
    source = FixedUsage(
        spent("*", "day", 750, 0.5, 12, day_end),
        spent("*", "month", 9000, 2.5, 90, month_end),
        spent(MODEL, "month", 9000, 2.5, 90, month_end),
    )

    report = usage_report(registry.map(), deferrals, source, ["team-a"], now=NOW)

    (tenant,) = report.tenants
    assert (tenant.tenant, tenant.on_budget, tenant.deferred) == ("team-a", "fail", 2)
    rows = {(row.model, row.window): row for row in tenant.rows}
    assert sorted(rows) == [("*", "day"), ("*", "month"), (MODEL, "month")]
    assert (rows["*", "day"].token_share, rows["*", "day"].cost_share) == (0.75, None)
    assert (rows["*", "month"].token_share, rows["*", "month"].cost_share) == (None, 0.25)
    assert rows[MODEL, "month"].token_share == pytest.approx(0.18)
    assert rows[MODEL, "month"].requests == 90
    assert day_end == NOW + 16 * 3600  # midnight UTC after 08:00
    document = report.to_dict()
    assert document["tenants"][0]["waiting_for_budget"] == 2
    assert document["tenants"][0]["usage"][0] == {
        "model": "*",
        "window": "day",
        "tokens": 750,
        "cost": 0.5,
        "requests": 12,
        "token_budget": 1000,
        "token_share": 0.75,
        "cost_budget": None,
        "cost_share": None,
        "resets_at": day_end,
    }


def test_the_gauges_show_spend_budget_and_waiting_samples_per_tenant(
    redis_client: redis.Redis, prefix: str
) -> None:
    registry = TenantRegistry(redis_client, prefix=prefix)
    registry.add(Tenant("team-a", budgets=(Budget(tokens_per_day=1000, cost_per_day=2.0),)))
    deferrals = DeferredSamples(redis_client, prefix=prefix)
    park(deferrals, refused(resets_at=NOW + 60), 1)
    metrics = WorkerMetrics()
    usage = FixedUsage(spent("*", "day", 400, 1.5, 7, NOW + 60))
    metrics.registry.register(TenantCollector(registry, deferrals, usage))

    day = {"tenant": "team-a", "model": "*", "window": "day"}
    assert metrics.value("ace_tenant_spend", **day, kind="tokens") == 400
    assert metrics.value("ace_tenant_spend", **day, kind="cost") == 1.5
    assert metrics.value("ace_tenant_spend", **day, kind="requests") == 7
    assert metrics.value("ace_tenant_budget", **day, kind="tokens") == 1000
    assert metrics.value("ace_tenant_budget", **day, kind="cost") == 2.0
    assert metrics.value("ace_tenant_waiting_samples", tenant="team-a") == 1
    assert metrics.value("ace_tenant_waiting_samples", tenant="default") == 0


def test_tenant_usage_prints_each_budget_and_the_samples_waiting(
    redis_client: redis.Redis, redis_url: str, prefix: str, clean_env: pytest.MonkeyPatch
) -> None:
    registry = TenantRegistry(redis_client, prefix=prefix)
    registry.add(Tenant("team-a", budgets=(Budget(tokens_per_day=1000),)))
    park(DeferredSamples(redis_client, prefix=prefix), refused(resets_at=time.time() + 60), 1)
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", prefix)
    stamp_current_schema(redis_client, prefix)  # as this version's first process did
    runner = CliRunner()

    plain = runner.invoke(cli, ["tenant", "usage", "team-a"])
    document = runner.invoke(cli, ["tenant", "usage", "--json"])
    bad = runner.invoke(cli, ["tenant", "usage", "Team A"])

    assert plain.exit_code == 0, plain.output
    said = " ".join(plain.output.split())
    assert "tenant team-a (when a budget is spent: wait): 1 sample waiting for budget" in said
    assert "all models" in said and "1,000" in said
    assert document.exit_code == 0, document.output
    tenants = {entry["tenant"]: entry for entry in json.loads(document.stdout)["tenants"]}
    assert sorted(tenants) == ["default", "team-a"]
    assert tenants["team-a"]["waiting_for_budget"] == 1
    assert tenants["team-a"]["usage"][0]["token_budget"] == 1000
    assert bad.exit_code == 2 and "TENANT" in bad.output
