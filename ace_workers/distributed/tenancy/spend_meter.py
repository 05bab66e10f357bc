"""Every tenant's spend, metered without a round trip of its own.

The limiter counts a call's usage when it settles a reservation, which only calls that a
budget, a provider limit or a 429 applies to make (``Limiter.applies``). Every other call's
usage is added here, in the process, and written to the same spend windows the limiter's
``settle`` writes (``LimiterKeys.spend``, the tenant's models set) by the next command this
process sends anyway that it can ride with (:mod:`..store.riding_writes`): on a Redis server a
step's batch script (a step's start, a sample's finish), on either layout the limiter's read of
the throttled models (at most once a second, in the spend's own slot). A call is counted by one
path only, so nothing is counted twice.

What this process spent since then is not written yet: a working process writes it with its
next step (on a server) or within about a second (its next throttled read, while it makes
calls); a worker that ran its last step writes it on its fleet record's beat (every
``REFRESH_SECONDS``, 30 s) and as it shuts down (``celery_worker.write_spend``). A finished
batch's spend is complete once its workers' next step or beat has passed; the process that ran
a sample's last step wrote its part with the sample's finish.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from ..store.keys import DEFAULT_PREFIX, LimiterKeys
from .limiter import window_periods
from .tenants import ALL_MODELS

__all__ = ["SpendMeter"]

logger = logging.getLogger(__name__)

# A spend window outlives its end by this many seconds (as the limiter's settle keeps them).
_WINDOW_GRACE = 60


@dataclass
class _Spent:
    """What a tenant spent on one model in one day (and its month) and not yet written."""

    tokens: int = 0
    cost: float = 0.0
    requests: int = 0


# (tenant, model, day period, month period) -> what was spent; the periods' ends go with them.
_Slot = tuple[str, str, str, str]


class SpendMeter:
    """The spend of this process's calls the limiter did not count, until a batch script carries it.

    ``metering`` is a seam for tests and benchmarks only: False drops every call's usage (the
    unmetered baseline the cost of metering is measured against), and is no setting.
    """

    def __init__(self, *, prefix: str = DEFAULT_PREFIX, clock: Callable[[], float] = time.time) -> None:
        self.keys = LimiterKeys(prefix)
        self.metering = True
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[_Slot, _Spent] = {}
        self._ends: dict[_Slot, tuple[float, float]] = {}

    def add(self, tenant: str, model: str, tokens: int, cost: float) -> None:
        """Count one call of ``tenant`` to ``model`` that used ``tokens`` and ``cost`` (USD)."""
        if not self.metering:
            return
        periods = window_periods(self._clock())
        (day, day_end), (month, month_end) = periods["day"], periods["month"]
        slot = (tenant, model, day, month)
        with self._lock:
            spent = self._pending.setdefault(slot, _Spent())
            spent.tokens += max(0, int(tokens))
            spent.cost += cost if math.isfinite(cost) and cost > 0 else 0.0
            spent.requests += 1
            self._ends[slot] = (day_end, month_end)

    def board(self, pipe: Any) -> Callable[[bool], None] | None:
        """Queue what was spent since the last pipeline on ``pipe`` (RidingWrites); None if nothing."""
        with self._lock:
            taken, self._pending = self._pending, {}
            ends, self._ends = self._ends, {}
        if not taken:
            return None
        for slot, spent in taken.items():
            self._queue(pipe, slot, spent, ends[slot])

        def done(sent: bool) -> None:
            if not sent:
                self._give_back(taken, ends)

        return done

    def flush(self, client: redis.Redis) -> None:
        """Write what is pending in a pipeline of its own (a worker stopping, a test)."""
        pipe = client.pipeline(transaction=False)
        done = self.board(pipe)
        if done is None:
            return
        try:
            pipe.execute()
        except BaseException:
            done(False)
            raise
        done(True)

    def _queue(self, pipe: Any, slot: _Slot, spent: _Spent, ends: tuple[float, float]) -> None:
        tenant, model, day, month = slot
        for scope in (model, ALL_MODELS):
            for window, period, end in (("day", day, ends[0]), ("month", month, ends[1])):
                key = self.keys.spend(tenant, window, period, scope)
                pipe.hincrby(key, "tokens", spent.tokens)
                if spent.cost:  # most calls are unpriced; a window without the field reads as 0
                    pipe.hincrbyfloat(key, "cost", spent.cost)
                pipe.hincrby(key, "requests", spent.requests)
                pipe.expireat(key, math.ceil(end) + _WINDOW_GRACE)
        pipe.sadd(self.keys.models(tenant), model)
        pipe.expireat(self.keys.models(tenant), math.ceil(ends[1]) + _WINDOW_GRACE)

    def _give_back(self, taken: dict[_Slot, _Spent], ends: dict[_Slot, tuple[float, float]]) -> None:
        with self._lock:
            for slot, spent in taken.items():
                mine = self._pending.setdefault(slot, _Spent())
                mine.tokens += spent.tokens
                mine.cost += spent.cost
                mine.requests += spent.requests
                self._ends[slot] = ends[slot]
        logger.warning("the tenants' spend was not written; it is kept for the next step")
