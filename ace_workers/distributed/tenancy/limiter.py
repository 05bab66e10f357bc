"""The fleet-wide LLM limiter: tenants' budgets and providers' rate limits, enforced in one Redis script.

Every LLM attempt that a budget or a provider limit applies to costs two script calls
(``limiter.lua``): :meth:`Limiter.reserve` before it and :meth:`Limiter.settle` after it.

- **Budgets.** A tenant's :class:`~.tenants.Budget` for the model and its all-models budget
  ("*") count tokens and cost per UTC day and UTC month. A reservation holds the call's
  estimate until it settles with the real usage, so calls in flight on every worker count:
  a call is refused (:class:`BudgetExhaustedError`) when what is spent and reserved plus its
  estimate would pass a limit. The first call of a window goes through whatever its estimate,
  so the fleet overshoots a budget by one call at most. A reservation a crashed worker never
  settled expires after ``hold_seconds`` and is freed.
- **Provider limits** (``ACE_MODEL_LIMITS``): requests and tokens per minute per model, shared
  by every tenant and worker, paced by GCRA. A call whose slot is near books it and sleeps until
  it; one whose slot is further than ``book_seconds`` away sleeps and asks again, for at most
  ``max_wait_seconds`` in all, then :class:`ProviderBusyError` (an LLMError: the worker retries
  the step later).
- **429s** (:meth:`Limiter.rate_limited`): a provider's 429 blocks the model for everyone until
  ``retry_after`` (default :data:`DEFAULT_RETRY_AFTER` s) and halves its rate (at most once per
  :data:`DECREASE_GAP` s, as the calls in flight answer 429 together); the rate then grows back by
  a twentieth of the configured rpm per second. A model with no configured rpm starts from
  :data:`UNCONFIGURED_START_RPM` after its first 429 (the fleet's real rate is not counted on the
  fast path, so the limiter cannot know it), grows by :data:`UNCONFIGURED_STEP_RPM` per second, and
  is left unpaced again after :data:`QUIET_SECONDS` without a 429.
- **The fast path.** With no budget for (tenant, model), no provider limit for the model and no
  429 slowdown recorded, :meth:`Limiter.applies` says so from memory (the slowdowns are read at
  most once a second), and the call costs no Redis round trip: its usage is metered all the same,
  written with a command sent anyway (spend_meter.py), with the throttled read among them.
"""

from __future__ import annotations

import calendar
import functools
import logging
import math
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis

from ..lua import read_lua
from ..store.errors import CorruptDataError
from ..store.keys import DEFAULT_PREFIX, LimiterKeys
from ..store.replies import decode_text
from ..store.riding_writes import RidingWrites, ride_along
from .errors import BudgetExhaustedError, ProviderBusyError
from .model_limits import ModelLimits
from .tenants import ALL_MODELS, BUDGET_LIMITS, Budget, Tenant

__all__ = [
    "DECREASE_GAP",
    "DEFAULT_RETRY_AFTER",
    "QUIET_SECONDS",
    "UNCONFIGURED_START_RPM",
    "UNCONFIGURED_STEP_RPM",
    "Limiter",
    "ProviderBusyError",
    "Reservation",
    "TenantUsage",
    "WindowUsage",
    "window_periods",
]

logger = logging.getLogger(__name__)

_SCRIPT = read_lua(__name__, "limiter.lua")

# Seconds a 429 blocks its model when the provider named no Retry-After.
DEFAULT_RETRY_AFTER = 1.0
# At most one halving of a model's rate per this many seconds.
DECREASE_GAP = 1.0
# A model with no configured rpm: its rate after its first 429, and its growth per second after.
UNCONFIGURED_START_RPM = 60.0
UNCONFIGURED_STEP_RPM = 6.0
# ... and the seconds without a 429 after which it is left unpaced again.
QUIET_SECONDS = 60.0
# A configured model's rate grows back by this share of its rpm per second after a cut.
RECOVERY_SHARE_PER_SECOND = 1 / 20
# The rate a 429 cannot cut below, requests per minute.
FLOOR_RPM = 1.0
# How often a process reads which models a 429 slowed (its fast path's only Redis read).
THROTTLED_MAX_AGE = 1.0

# What limiter.lua's arguments are joined by (it never occurs in a tenant's or a model's name).
_SEPARATOR = "\x1f"
# The order limiter.lua reports a refused budget's limit in: model scope then "*".
_LIMIT_ORDER = ("tokens_per_day", "tokens_per_month", "cost_per_day", "cost_per_month")


@dataclass(frozen=True)
class Reservation:
    """A granted LLM call: what it reserved, to settle with the real usage afterwards."""

    id: str
    tenant: str
    model: str
    tokens: int
    cost: float
    delay: float = 0.0


@dataclass(frozen=True)
class WindowUsage:
    """A tenant's spend on one model ("*": all) in one day or month, and what calls in flight reserved."""

    model: str
    window: str
    period: str
    tokens: int
    cost: float
    requests: int
    reserved_tokens: float
    reserved_cost: float
    resets_at: float


@dataclass(frozen=True)
class TenantUsage:
    """A tenant's spend per model and window (day and month), as :meth:`Limiter.usage` read it."""

    tenant: str
    windows: tuple[WindowUsage, ...]

    def window(self, model: str, window: str) -> WindowUsage | None:
        """The usage of ``model`` ("*": all models) in ``window`` ("day" or "month"), if any was spent."""
        return next((w for w in self.windows if w.model == model and w.window == window), None)


def window_periods(now: float) -> dict[str, tuple[str, float]]:
    """The UTC day and month ``now`` falls in: window -> (period name, when it ends, unix time)."""
    return _day_periods(int(now // 86400))


@functools.lru_cache(maxsize=4)
def _day_periods(day: int) -> dict[str, tuple[str, float]]:
    # Per UTC day (unix days have no leap seconds): every call of a day shares one answer.
    moment = datetime.fromtimestamp(day * 86400, tz=UTC)
    day_start = calendar.timegm((moment.year, moment.month, moment.day, 0, 0, 0))
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return {
        "day": (moment.strftime("%Y%m%d"), float(day_start + 86400)),
        "month": (moment.strftime("%Y%m"), float(calendar.timegm((year, month, 1, 0, 0, 0)))),
    }


def _optional(value: float | None) -> str:
    return "" if value is None else repr(float(value))


class Limiter:
    """The fleet's shared LLM limiter in Redis: reserve before a call, settle after it.

    Args:
        model_limits: The providers' limits by model (``ACE_MODEL_LIMITS``).
        hold_seconds: How long a reservation lives unless settled (longer than one LLM attempt).
        max_wait_seconds: The longest one call waits for its slot before ProviderBusyError.
        book_seconds: A slot at most this far away is booked at once; a later one is asked for again.
        throttled_max_age: How often the models a 429 slowed are read (seconds).
        clock: Unix time for tests; None uses the Redis server's clock in the script (one clock
            for the whole fleet) and this machine's for the day and month windows.
        riders: Writes sent along with the read of the throttled models (the process's metered
            spend, whose keys share the limiter's slot; see store/riding_writes.py).
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        model_limits: Mapping[str, ModelLimits] | None = None,
        hold_seconds: float = 120.0,
        max_wait_seconds: float = 60.0,
        book_seconds: float = 5.0,
        throttled_max_age: float = THROTTLED_MAX_AGE,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        riders: RidingWrites | None = None,
    ) -> None:
        self.redis = client
        self.riders = riders
        self.keys = LimiterKeys(prefix)
        self.model_limits = dict(model_limits or {})
        self.hold_seconds = hold_seconds
        self.max_wait_seconds = max_wait_seconds
        self.book_seconds = book_seconds
        self.throttled_max_age = throttled_max_age
        self._clock = clock
        self._sleep = sleep
        self._script = client.register_script(_SCRIPT)
        self._lock = threading.Lock()
        self._throttled: dict[str, float] = {}
        self._throttled_read = -math.inf

    # -- the fast path ----------------------------------------------------------------
    def now(self) -> float:
        """Unix time as this limiter counts it (the windows; the script keeps to Redis's clock)."""
        return self._clock() if self._clock is not None else time.time()

    def applies(self, tenant: Tenant, model: str) -> bool:
        """True when a call of ``tenant`` to ``model`` must pass the limiter (a budget, a limit, a 429)."""
        return bool(tenant.budget_for(model)) or model in self.model_limits or self.throttled(model)

    def throttled(self, model: str) -> bool:
        """True while a provider 429 slows ``model`` (as read at most THROTTLED_MAX_AGE s ago)."""
        now = time.monotonic()
        with self._lock:
            if now - self._throttled_read >= self.throttled_max_age:
                self._throttled_read = now
                fresh = True
            else:
                fresh = False
        if fresh:
            raw = self._read_throttled()
            until = {decode_text(k): self._number(self.keys.throttled, k, v) for k, v in raw.items()}
            with self._lock:
                self._throttled = until
        with self._lock:
            return self._throttled.get(model, -math.inf) > self.now()

    def _read_throttled(self) -> Any:
        """The throttled models' hash, with the riders' pending writes in the same round trip."""
        if self.riders is not None:
            rode, raw = ride_along(self.redis, self.riders, lambda pipe: pipe.hgetall(self.keys.throttled))
            if rode:
                if isinstance(raw, Exception):
                    raise raw
                return raw
        return self.redis.hgetall(self.keys.throttled)

    # -- one call ---------------------------------------------------------------------
    def acquire(self, tenant: Tenant, model: str, tokens: int, cost: float = 0.0) -> Reservation:
        """Reserve a call, sleeping while the model's shared pace asks it to (bounded).

        Raises:
            BudgetExhaustedError: a budget of ``tenant`` has no room for the call.
            ProviderBusyError: the call would wait longer than ``max_wait_seconds`` in all.
        """
        waited = 0.0
        while True:
            granted = self.reserve(tenant, model, tokens, cost)
            if isinstance(granted, Reservation):
                if granted.delay > 0:
                    self._sleep(granted.delay)
                return granted
            wait = granted
            if waited + wait > self.max_wait_seconds:
                raise ProviderBusyError(model, waited, wait)
            # Sleep until the slot is within booking reach; jitter keeps waiters from asking together.
            pause = max(0.01, wait - self.book_seconds) + random.uniform(0, 0.1)
            self._sleep(pause)
            waited += pause

    def reserve(self, tenant: Tenant, model: str, tokens: int, cost: float = 0.0) -> Reservation | float:
        """One try: a Reservation (sleep ``delay`` s before calling), or the seconds to wait and ask again.

        Raises:
            BudgetExhaustedError: a budget of ``tenant`` has no room for the call.
        """
        now = self.now()
        budgets = {b.model: b for b in tenant.budget_for(model)}
        limits = self.model_limits.get(model)
        paced = limits is not None or self.throttled(model)
        reservation_id = uuid.uuid4().hex
        argv: list[Any] = [
            "reserve",
            self._time_arg(now),
            reservation_id,
            tenant.name,
            model,
            int(tokens),
            repr(float(cost)),
            self.hold_seconds,
            self.book_seconds,
        ]
        for scope in (model, ALL_MODELS):
            budget = budgets.get(scope, Budget(scope))
            argv += [_optional(getattr(budget, name)) for name in _LIMIT_ORDER]
        rpm = limits.rpm if limits else None
        argv += [
            _optional(rpm),
            _optional(limits.tpm if limits else None),
            limits.burst if limits else 0.0,
            self._step(rpm),
            QUIET_SECONDS,
            "1" if paced else "0",
        ]
        reply = self._run(self._call_keys(tenant.name, model, now), argv)
        status = decode_text(reply[0])
        if status == "ok":
            return Reservation(reservation_id, tenant.name, model, int(tokens), float(cost), float(reply[1]))
        if status == "wait":
            return float(reply[1])
        position = int(reply[1]) - 1
        scope = model if position < 4 else ALL_MODELS
        limit = _LIMIT_ORDER[position % 4]
        window = "day" if limit.endswith("_day") else "month"
        raise BudgetExhaustedError(
            tenant.name,
            scope,
            limit,
            spent=float(reply[2]),
            budget=float(getattr(budgets[scope], limit)),
            resets_at=window_periods(now)[window][1],
            on_budget=tenant.on_budget,
            requested=float(tokens) if limit.startswith("tokens") else float(cost),
        )

    def settle(self, reservation: Reservation, tokens: int | None, cost: float | None) -> bool:
        """Count the call's real usage (None: its estimate) and drop its reservation.

        False when the reservation had expired already (its usage is counted all the same).
        """
        now = self.now()
        periods = window_periods(now)
        limits = self.model_limits.get(reservation.model)
        argv: list[Any] = [
            "settle",
            self._time_arg(now),
            reservation.id,
            reservation.tenant,
            reservation.model,
            int(reservation.tokens if tokens is None else tokens),
            repr(float(reservation.cost if cost is None else cost)),
            _optional(limits.tpm if limits else None),
            periods["day"][1],
            periods["month"][1],
        ]
        found = self._run(self._call_keys(reservation.tenant, reservation.model, now), argv)
        if not found:
            logger.warning(
                "LLM call of tenant %s on %s settled after its reservation expired (%.0f s)",
                reservation.tenant,
                reservation.model,
                self.hold_seconds,
            )
        return bool(found)

    def release(self, reservation: Reservation) -> bool:
        """Drop the reservation of a call that failed before using anything (counted as a request)."""
        return self.settle(reservation, 0, 0.0)

    def rate_limited(self, model: str, retry_after: float | None = None) -> float:
        """A provider answered 429 for ``model``: block it fleet-wide and cut its rate; returns until when."""
        now = self.now()
        limits = self.model_limits.get(model)
        rpm = limits.rpm if limits else None
        wait = DEFAULT_RETRY_AFTER if retry_after is None else max(0.0, min(float(retry_after), 600.0))
        argv = [
            "throttle",
            self._time_arg(now),
            model,
            repr(wait),
            _optional(rpm),
            self._step(rpm),
            QUIET_SECONDS,
            UNCONFIGURED_START_RPM,
            DECREASE_GAP,
            FLOOR_RPM,
        ]
        reply = self._run([self.keys.rate(model), self.keys.throttled], argv)
        until, slowed_until = float(reply[0]), float(reply[1])
        with self._lock:
            # This process slows down at once; the others see it within THROTTLED_MAX_AGE.
            self._throttled[model] = max(self._throttled.get(model, -math.inf), slowed_until)
        logger.info("provider 429 on %s: the fleet waits until %.3f and slows down", model, until)
        return until

    # -- reading ----------------------------------------------------------------------
    def usage(self, tenant: str) -> TenantUsage:
        """``tenant``'s spend per model (and "*") in the current UTC day and month, with its reservations."""
        now = self.now()
        periods = window_periods(now)
        models = sorted(decode_text(m) for m in self.redis.smembers(self.keys.models(tenant)))
        scopes = [ALL_MODELS, *(m for m in models if m != ALL_MODELS)]
        with self.redis.pipeline(transaction=False) as pipe:
            for scope in scopes:
                for window, (period, _) in periods.items():
                    pipe.hgetall(self.keys.spend(tenant, window, period, scope))
            pipe.hgetall(self.keys.reserved)
            replies = pipe.execute()
        reserved = self._reserved(replies[-1], tenant)
        missing = sorted(set(reserved) - set(scopes))
        if missing:  # models with calls in flight and nothing settled yet this month
            with self.redis.pipeline(transaction=False) as pipe:
                for scope in missing:
                    for window, (period, _) in periods.items():
                        pipe.hgetall(self.keys.spend(tenant, window, period, scope))
                replies = replies[:-1] + pipe.execute() + replies[-1:]
            scopes += missing
        windows = []
        for position, (scope, window) in enumerate((s, w) for s in scopes for w in periods):
            period, ends = periods[window]
            key = self.keys.spend(tenant, window, period, scope)
            spent = {decode_text(k): self._number(key, k, v) for k, v in replies[position].items()}
            held = reserved.get(scope, {})
            if not spent and not held:
                continue
            windows.append(
                WindowUsage(
                    model=scope,
                    window=window,
                    period=period,
                    tokens=int(spent.get("tokens", 0)),
                    cost=spent.get("cost", 0.0),
                    requests=int(spent.get("requests", 0)),
                    reserved_tokens=held.get("tokens", 0.0),
                    reserved_cost=held.get("cost", 0.0),
                    resets_at=ends,
                )
            )
        return TenantUsage(tenant, tuple(windows))

    def has_room(
        self, tenant: Tenant, model: str | None = None, needs: Mapping[str, float] | None = None
    ) -> bool:
        """True when every budget of ``tenant`` (those ``model`` counts against, if named) has room now.

        Room: what is spent and reserved is below every limit, so a next call would be let
        through: when it turns true, samples deferred for the budget can be released.
        ``needs`` (by limit name, e.g. ``cost_per_day``) is the next call's estimate: room then
        means that call fits, as :meth:`reserve` judges it. Without it, a call refused because
        its estimate did not fit under a limit not yet reached would be released, refused and
        parked again on every tick of the reconciler.
        """
        budgets = (
            tenant.budget_for(model) if model is not None else tuple(b for b in tenant.budgets if b.limited)
        )
        if not budgets:
            return True
        usage = self.usage(tenant.name)
        for budget in budgets:
            for limit in BUDGET_LIMITS:
                value = getattr(budget, limit)
                if value is None:
                    continue
                window = usage.window(budget.model, "day" if limit.endswith("_day") else "month")
                if window is None:
                    if value <= 0:
                        return False
                    continue
                kind = "tokens" if limit.startswith("tokens") else "cost"
                committed = (
                    (window.tokens + window.reserved_tokens)
                    if kind == "tokens"
                    else (window.cost + window.reserved_cost)
                )
                need = (needs or {}).get(limit, 0.0)
                # As limiter.lua judges it: the first call of a window goes whatever its estimate.
                if committed >= value or (committed > 0 and committed + need > value):
                    return False
        return True

    # -- helpers ----------------------------------------------------------------------
    def _call_keys(self, tenant: str, model: str, now: float) -> list[str]:
        periods = window_periods(now)
        keys = self.keys
        return [
            keys.reservations,
            keys.expiry,
            keys.reserved,
            keys.rate(model),
            keys.throttled,
            keys.spend(tenant, "day", periods["day"][0], model),
            keys.spend(tenant, "month", periods["month"][0], model),
            keys.spend(tenant, "day", periods["day"][0], ALL_MODELS),
            keys.spend(tenant, "month", periods["month"][0], ALL_MODELS),
            keys.models(tenant),
        ]

    def _time_arg(self, now: float) -> str:
        return repr(now) if self._clock is not None else ""

    @staticmethod
    def _step(rpm: float | None) -> float:
        return rpm * RECOVERY_SHARE_PER_SECOND if rpm is not None else UNCONFIGURED_STEP_RPM

    def _run(self, keys: list[str], argv: list[Any]) -> Any:
        for name in argv[2:5]:  # the tenant and the model among them
            if isinstance(name, str) and _SEPARATOR in name:
                raise ValueError(f"{name!r}: a tenant or model name cannot hold the unit separator")
        packed = _SEPARATOR.join(str(value) for value in argv[1:])
        try:
            return self._script(keys=keys, args=[argv[0], packed])
        except redis.ResponseError as error:
            text = str(error)
            if text.startswith("WRONGTYPE"):
                raise CorruptDataError(
                    self.keys.base, f"a limiter key holds the wrong type: {text}"
                ) from None
            found = re.search(r"ace-limiter: key (\S+) (.*)", text)
            if found is None:
                raise
            raise CorruptDataError(found.group(1), found.group(2).split(" script:")[0]) from None

    def _reserved(self, raw: Mapping[Any, Any], tenant: str) -> dict[str, dict[str, float]]:
        held: dict[str, dict[str, float]] = {}
        for field, value in raw.items():
            parts = decode_text(field).split(_SEPARATOR)
            if len(parts) != 3:
                raise CorruptDataError(
                    self.keys.reserved, f"field {decode_text(field)!r} is not TENANT/MODEL/KIND"
                )
            if parts[0] != tenant:
                continue
            held.setdefault(parts[1], {})[parts[2]] = self._number(self.keys.reserved, field, value)
        return held

    @staticmethod
    def _number(key: str, field: Any, value: Any) -> float:
        try:
            number = float(decode_text(value))
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise CorruptDataError(
                key, f"field {decode_text(field)!r} holds {decode_text(value)!r}, not a number"
            )
        return number
