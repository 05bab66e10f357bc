"""The fleet-wide LLM limiter: budgets per window, reservations, GCRA pacing, 429s, hostile contents."""

from __future__ import annotations

import pytest
import redis

from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.errors import CorruptDataError
from ace_workers.distributed.store.keys import LimiterKeys
from ace_workers.distributed.tenancy import Budget, BudgetExhaustedError, Tenant
from ace_workers.distributed.tenancy.limiter import (
    QUIET_SECONDS,
    UNCONFIGURED_START_RPM,
    Limiter,
    ProviderBusyError,
    Reservation,
    window_periods,
)
from ace_workers.distributed.tenancy.model_limits import ModelLimits, parse_model_limits

# 2026-11-26 23:00:00 UTC: an hour before the day's window resets, four days before the month's.
T0 = 1_795_734_000.0
NEXT_DAY = 1_795_737_600.0
NEXT_MONTH = 1_796_083_200.0


class Clock:
    """A settable clock, and the sleeps asked of it (which move it on)."""

    def __init__(self, now: float = T0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_limiter(client: redis.Redis, clock: Clock, limits: str = "", **options: object) -> Limiter:
    return Limiter(
        client,
        prefix="lt",
        model_limits=parse_model_limits(limits),
        clock=clock,
        sleep=clock.sleep,
        **options,  # type: ignore[arg-type]
    )


def tenant_with(*budgets: Budget, on_budget: str = "wait") -> Tenant:
    return Tenant("acme", budgets=budgets, on_budget=on_budget)


def granted(result: Reservation | float) -> Reservation:
    assert isinstance(result, Reservation), f"expected a reservation, got a wait of {result}"
    return result


def test_the_windows_are_the_utc_day_and_month() -> None:
    periods = window_periods(T0)
    assert periods == {"day": ("20261126", NEXT_DAY), "month": ("202611", NEXT_MONTH)}


def test_a_call_past_the_days_token_budget_is_refused_with_the_limit_and_the_reset(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock)
    tenant = tenant_with(Budget("m", tokens_per_day=1000), on_budget="fail")
    first = granted(limiter.reserve(tenant, "m", 600))
    limiter.settle(first, 700, None)
    with pytest.raises(BudgetExhaustedError) as refused:
        limiter.reserve(tenant, "m", 400)
    error = refused.value
    assert (error.tenant, error.model, error.limit) == ("acme", "m", "tokens_per_day")
    assert (error.spent, error.budget, error.resets_at, error.on_budget) == (700, 1000, NEXT_DAY, "fail")
    # A smaller call still fits.
    granted(limiter.reserve(tenant, "m", 300))


def test_the_all_models_cost_budget_counts_every_model_and_resets_with_the_month(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock)
    tenant = tenant_with(Budget("*", cost_per_month=1.0))
    limiter.settle(granted(limiter.reserve(tenant, "a", 10, 0.5)), 10, 0.6)
    limiter.settle(granted(limiter.reserve(tenant, "b", 10, 0.3)), 10, 0.4)
    with pytest.raises(BudgetExhaustedError) as refused:
        limiter.reserve(tenant, "c", 10, 0.01)
    assert (refused.value.model, refused.value.limit, refused.value.resets_at) == (
        "*",
        "cost_per_month",
        NEXT_MONTH,
    )
    assert refused.value.spent == pytest.approx(1.0)
    clock.now = NEXT_MONTH + 1
    granted(limiter.reserve(tenant, "c", 10, 0.01))


def test_reservations_in_flight_count_against_the_budget(redis_client: redis.Redis, clock: Clock) -> None:
    limiter = make_limiter(redis_client, clock)
    tenant = tenant_with(Budget("m", tokens_per_day=1000))
    granted(limiter.reserve(tenant, "m", 400))
    granted(limiter.reserve(tenant, "m", 400))
    with pytest.raises(BudgetExhaustedError) as refused:
        limiter.reserve(tenant, "m", 400)
    assert refused.value.spent == 800  # reserved, nothing settled yet
    assert limiter.has_room(tenant)  # 800 of 1000: a smaller call would go


def test_settling_counts_the_real_usage_and_frees_the_reservation(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock)
    tenant = tenant_with(Budget("m", tokens_per_day=10_000))
    reservation = granted(limiter.reserve(tenant, "m", 900, 0.09))
    during = limiter.usage("acme").window("m", "day")
    assert during is not None and (during.tokens, during.reserved_tokens) == (0, 900)
    assert limiter.settle(reservation, 123, 0.0123)
    usage = limiter.usage("acme")
    for model in ("m", "*"):
        for window in ("day", "month"):
            spent = usage.window(model, window)
            assert spent is not None
            assert (spent.tokens, spent.requests, spent.reserved_tokens) == (123, 1, 0)
            assert spent.cost == pytest.approx(0.0123)
    assert usage.window("m", "day").resets_at == NEXT_DAY  # type: ignore[union-attr]


def test_a_spend_window_expires_when_it_ends(redis_client: redis.Redis, clock: Clock) -> None:
    limiter = make_limiter(redis_client, clock)
    tenant = tenant_with(Budget("m", tokens_per_day=10_000))
    limiter.settle(granted(limiter.reserve(tenant, "m", 10)), 10, 0.0)
    day_key = limiter.keys.spend("acme", "day", "20261126", "m")
    month_key = limiter.keys.spend("acme", "month", "202611", "m")
    assert 0 < redis_client.ttl(day_key) <= NEXT_DAY - T0 + 60
    assert NEXT_DAY - T0 < redis_client.ttl(month_key) <= NEXT_MONTH - T0 + 60


def test_a_reservation_never_settled_expires_and_its_budget_is_freed(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock, hold_seconds=30)
    tenant = tenant_with(Budget("m", tokens_per_day=1000))
    granted(limiter.reserve(tenant, "m", 900))  # its worker crashes: never settled
    with pytest.raises(BudgetExhaustedError):
        limiter.reserve(tenant, "m", 900)
    clock.now += 31
    late = granted(limiter.reserve(tenant, "m", 900))
    assert redis_client.hlen(limiter.keys.reservations) == 1
    assert limiter.settle(late, 900, None)


def test_a_settle_after_the_reservation_expired_still_counts_its_usage(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock, hold_seconds=30)
    tenant = tenant_with(Budget("m", tokens_per_day=10_000))
    slow = granted(limiter.reserve(tenant, "m", 100))
    clock.now += 31
    granted(limiter.reserve(tenant, "m", 100))  # purges the expired one
    assert not limiter.settle(slow, 100, None)
    spent = limiter.usage("acme").window("m", "day")
    assert spent is not None and (spent.tokens, spent.reserved_tokens) == (100, 100)


def test_requests_per_minute_space_the_calls_fleet_wide(redis_client: redis.Redis, clock: Clock) -> None:
    limiter = make_limiter(redis_client, clock, "m=rpm:60", book_seconds=2.5)
    other = make_limiter(redis_client, clock, "m=rpm:60", book_seconds=2.5)  # another worker
    delays = [
        granted(lim.reserve(Tenant(name), "m", 10)).delay
        for lim, name in [(limiter, "acme"), (other, "beta"), (limiter, "acme")]
    ]
    assert delays == [0.0, 1.0, 2.0]
    assert limiter.reserve(Tenant("acme"), "m", 10) == pytest.approx(3.0)  # beyond booking reach: wait
    clock.now += 5
    assert granted(limiter.reserve(Tenant("acme"), "m", 10)).delay == 0.0


def test_tokens_per_minute_book_the_estimate_and_settle_corrects_it(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock, "m=tpm:6000")  # 100 tokens a second
    first = granted(limiter.reserve(Tenant("acme"), "m", 500))
    assert first.delay == 0.0
    limiter.settle(first, 100, None)  # used a fifth of its estimate: 4 s given back
    assert granted(limiter.reserve(Tenant("acme"), "m", 500)).delay == pytest.approx(1.0)


def test_acquire_sleeps_until_its_slot_and_gives_up_past_its_bound(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock, "m=rpm:6", book_seconds=1, max_wait_seconds=25)
    limiter.acquire(Tenant("acme"), "m", 10)
    start = clock.now
    limiter.acquire(Tenant("acme"), "m", 10)  # 10 s away: waits, asks again, books, sleeps
    assert clock.now - start == pytest.approx(10, abs=0.2)
    limiter.rate_limited("m", retry_after=100)  # the next slot is further away than the bound
    with pytest.raises(ProviderBusyError) as busy:
        limiter.acquire(Tenant("acme"), "m", 10)
    assert busy.value.model == "m" and busy.value.waited <= 25


def test_a_429_blocks_the_model_halves_its_rate_and_it_recovers(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock, "m=rpm:60", book_seconds=10)
    acme = Tenant("acme")
    limiter.reserve(acme, "m", 1)
    assert limiter.rate_limited("m", retry_after=3) == T0 + 3
    limiter.rate_limited("m", retry_after=3)  # the next call in flight answers 429 too: no second cut
    clock.now += 1  # the first slot is after the block, the next 60/33 s later (30 rpm, +3 per second)
    delays = [granted(limiter.reserve(acme, "m", 1)).delay for _ in range(3)]
    assert delays == [2.0, pytest.approx(2.0 + 60 / 33), pytest.approx(2.0 + 120 / 33)]
    # A twentieth of the rpm back per second: 30 s later, long recovered, one second apart again.
    clock.now += 30
    assert [granted(limiter.reserve(acme, "m", 1)).delay for _ in range(2)] == [0.0, 1.0]
    assert redis_client.hget(limiter.keys.rate("m"), "slowed_rpm") is None
    assert not redis_client.hexists(limiter.keys.throttled, "m")


def test_a_429_paces_a_model_with_no_configured_rate_until_it_is_quiet(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock, book_seconds=10)
    # Another process, which learns of the 429 from Redis (at once here; within a second by default).
    watcher = make_limiter(redis_client, clock, throttled_max_age=0)
    acme = Tenant("acme")
    assert not limiter.applies(acme, "free") and not watcher.applies(acme, "free")
    limiter.rate_limited("free", retry_after=0)
    assert limiter.applies(acme, "free") and watcher.applies(acme, "free")
    spacing = 60 / UNCONFIGURED_START_RPM
    delays = [granted(limiter.reserve(acme, "free", 1)).delay for _ in range(2)]
    assert delays == [0.0, pytest.approx(spacing)]
    clock.now += QUIET_SECONDS + 1
    assert granted(limiter.reserve(acme, "free", 1)).delay == 0.0
    assert granted(limiter.reserve(acme, "free", 1)).delay == 0.0  # unpaced again
    assert not limiter.applies(acme, "free")


def test_with_nothing_configured_a_call_needs_no_limiter(redis_client: redis.Redis, clock: Clock) -> None:
    limiter = make_limiter(redis_client, clock, "paced=rpm:10")
    assert not limiter.applies(Tenant("acme"), "m")
    assert limiter.applies(Tenant("acme"), "paced")
    assert limiter.applies(tenant_with(Budget("*", cost_per_day=1.0)), "m")


def test_has_room_says_when_a_spent_budget_is_raised_or_reset(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock)
    tenant = tenant_with(Budget("m", tokens_per_day=100))
    limiter.settle(granted(limiter.reserve(tenant, "m", 100)), 150, None)
    assert not limiter.has_room(tenant)
    assert not limiter.has_room(tenant, "m")
    assert limiter.has_room(tenant, "other-model")
    assert limiter.has_room(tenant_with(Budget("m", tokens_per_day=1000)))
    clock.now = NEXT_DAY
    assert limiter.has_room(tenant)


def test_room_for_a_call_refused_for_its_estimate_needs_room_for_that_estimate(
    redis_client: redis.Redis, clock: Clock
) -> None:
    limiter = make_limiter(redis_client, clock)
    tenant = tenant_with(Budget("*", cost_per_day=3.0))
    limiter.settle(granted(limiter.reserve(tenant, "m", 1000, 1.5)), 1000, 2.0)
    with pytest.raises(BudgetExhaustedError) as refused:
        limiter.reserve(tenant, "m", 1000, 1.5)
    assert (refused.value.spent, refused.value.requested) == (2.0, 1.5)
    assert "has no room for the call (2 of 3 spent or reserved, the call needs about 1.5)" in str(
        refused.value
    )

    assert limiter.has_room(tenant)  # 2 of 3: a smaller call would go
    assert not limiter.has_room(tenant, "*", {"cost_per_day": 1.5})  # the refused one would not
    assert limiter.has_room(tenant, "*", {"cost_per_day": 1.0})
    assert limiter.has_room(tenant_with(Budget("*", cost_per_day=3.5)), "*", {"cost_per_day": 1.5})
    clock.now = NEXT_DAY  # the first call of a window goes whatever its estimate
    assert limiter.has_room(tenant, "*", {"cost_per_day": 5.0})


@pytest.mark.parametrize(
    ("corrupt", "named"),
    [
        (lambda r, k: r.hset(k.rate("m"), "treq", "soon"), "rate:m"),
        (lambda r, k: r.hset(k.spend("acme", "day", "20261126", "m"), "tokens", "lots"), "spend:acme:day"),
        (lambda r, k: (r.hset(k.reservations, "x", "junk"), r.zadd(k.expiry, {"x": 0})), "reservations"),
        (lambda r, k: r.set(k.reserved, "a string"), "wrong type"),
    ],
)
def test_corrupt_limiter_contents_give_an_error_naming_the_key(
    redis_client: redis.Redis, clock: Clock, corrupt: object, named: str
) -> None:
    limiter = make_limiter(redis_client, clock, "m=rpm:60")
    corrupt(redis_client, LimiterKeys("lt"))  # type: ignore[operator]
    with pytest.raises(CorruptDataError) as error:
        limiter.reserve(tenant_with(Budget("m", tokens_per_day=1000)), "m", 10)
    assert named in str(error.value)


def test_usage_refuses_a_corrupt_spend_window(redis_client: redis.Redis, clock: Clock) -> None:
    limiter = make_limiter(redis_client, clock)
    redis_client.sadd(limiter.keys.models("acme"), "m")
    redis_client.hset(limiter.keys.spend("acme", "month", "202611", "m"), "cost", "NaN")
    with pytest.raises(CorruptDataError, match="spend:acme:month:202611:m"):
        limiter.usage("acme")


def test_model_limits_are_parsed_and_bad_ones_named() -> None:
    parsed = parse_model_limits(" openai/gpt-4o-mini=rpm:500,tpm:200000 ; sim=rpm:600,burst:2 ;")
    assert parsed == {
        "openai/gpt-4o-mini": ModelLimits("openai/gpt-4o-mini", 500, 200000),
        "sim": ModelLimits("sim", 600, None, 2.0),
    }
    for bad, problem in [
        ("sim", "expected MODEL=rpm:N"),
        ("sim=rpm:0", "rpm must be a number > 0"),
        ("sim=rpm:fast", "not a number"),
        ("sim=rps:3", "not one of"),
        ("sim=burst:1", "name rpm, tpm or both"),
        ("sim=rpm:1;sim=rpm:2", "named twice"),
    ]:
        with pytest.raises(ValueError, match=problem):
            parse_model_limits(bad)


def test_a_bad_ace_model_limits_stops_the_settings_naming_the_variable() -> None:
    with pytest.raises(InvalidSettingError, match=r"ACE_MODEL_LIMITS.*rpm must be a number > 0"):
        WorkerSettings(model_limits="sim=rpm:-1")
    assert WorkerSettings(model_limits="sim=rpm:600").model_limits_map()["sim"].rpm == 600
