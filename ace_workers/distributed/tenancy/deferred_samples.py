"""Samples waiting for their tenant's budget: the step messages a spent budget refused, parked per tenant.

A step whose LLM call raised :class:`~.errors.BudgetExhaustedError` (the tenant asked to
``wait``) is not failed and not retried: its message (kwargs and payload, as a dead letter
keeps them) is parked here and acknowledged. One entry per (batch, epoch, sample, step), so a
message delivered twice parks once. A releaser claims each entry atomically before it sends it
again, so two releasers never send the same one. Each refusal is recorded too (model, limit,
spent, budget, reset time): :class:`~.budget_watch.ParkedBudgetWatch` reads it to say when the
tenant's budget has room again.

Entries are read without trusting them (Redis contents are untrusted): one that does not parse
is reported with its problem, never sent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import redis
from redis.typing import EncodableT

from ..lua import read_lua
from ..store.batches import sample_key, wrong_step_kwargs
from ..store.keys import deferred_key, deferring_tenants_key
from ..store.replies import decode_text
from .errors import BudgetExhaustedError

__all__ = ["DeferredEntry", "DeferredSamples", "Refusal", "entry_field"]

_PARK_LUA = read_lua(__name__, "park_deferred.lua")
_CLAIM_LUA = read_lua(__name__, "claim_deferred.lua")
_SEPARATOR = "|"
# Entries read (and claimed) per round trip by a releaser.
CHUNK = 200


def entry_field(batch_id: str, epoch: int, index: int, step: int) -> str:
    """The field of a deferred step: one per (batch, epoch, sample, step), so a redelivery parks once."""
    return _SEPARATOR.join((batch_id, sample_key(epoch, index), str(step)))


@dataclass(frozen=True)
class Refusal:
    """The last refusal of one of a tenant's limits: what was spent of what, and when it resets."""

    model: str
    limit: str
    spent: float
    budget: float
    resets_at: float
    requested: float = 0.0  # the refused call's estimate (0: refused only once spent reached the budget)

    @classmethod
    def of(cls, exc: BudgetExhaustedError) -> Refusal:
        """The refusal ``exc`` reports."""
        return cls(
            exc.model,
            exc.limit,
            float(exc.spent),
            float(exc.budget),
            float(exc.resets_at),
            float(exc.requested),
        )

    def fits(self, limit: float, committed: float) -> bool:
        """True if the refused call would go now: ``committed`` plus its estimate fit under ``limit``.

        Nothing committed in the window: the limiter lets its first call through whatever its estimate.
        """
        if committed >= limit:
            return False
        return committed <= 0 or committed + self.requested <= limit


@dataclass(frozen=True)
class DeferredEntry:
    """One parked step message: its field, and what could be read of it (``problem`` if not all)."""

    field: str
    data: dict[str, Any]
    problem: str | None = None

    @property
    def kwargs(self) -> dict[str, Any]:
        """The step message's kwargs (recipe, skillbook, index, batch_id, epoch, sample_index, ...)."""
        kwargs = self.data.get("kwargs")
        return kwargs if isinstance(kwargs, dict) else {}

    @property
    def payload(self) -> dict[str, Any]:
        """The payload the deferred step was given."""
        payload = self.data.get("payload")
        return payload if isinstance(payload, dict) else {}

    @classmethod
    def parse(cls, field: str, raw: bytes | str) -> DeferredEntry:
        """The entry stored under ``field``; one that cannot be sent again names its problem."""
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            return cls(field, {"raw": decode_text(raw)}, f"not JSON ({exc})")
        if not isinstance(data, dict) or not isinstance(data.get("kwargs"), dict):
            return cls(field, {"raw": data}, "not a deferred step (no kwargs object)")
        kwargs = data["kwargs"]
        wrong = wrong_step_kwargs(kwargs)
        if wrong:
            return cls(field, data, f"kwargs missing or of the wrong type: {', '.join(wrong)}")
        if not isinstance(data.get("payload"), dict):
            return cls(field, data, "no payload object")
        expected = entry_field(kwargs["batch_id"], kwargs["epoch"], kwargs["sample_index"], kwargs["index"])
        if expected != field:
            return cls(field, data, f"its kwargs name {expected!r}, not the field it is stored under")
        return cls(field, data)


class DeferredSamples:
    """The deferred step messages of every tenant of one fleet (one key prefix) in Redis."""

    def __init__(self, client: redis.Redis, *, prefix: str = "ace") -> None:
        self.redis = client
        self.prefix = prefix
        self._park = client.register_script(_PARK_LUA)
        self._claim = client.register_script(_CLAIM_LUA)

    def _keys(self, tenant: str) -> list[str]:
        return [deferred_key(self.prefix, tenant, part) for part in ("", "order")]

    def park(
        self,
        exc: BudgetExhaustedError,
        *,
        task_id: str | None,
        step: str,
        kwargs: dict[str, Any],
        payload: Any,
    ) -> bool:
        """Park a refused step message under ``exc.tenant``; False if it was parked already.

        ``kwargs`` must name the sample (batch_id, epoch, sample_index) and its step (index).
        """
        field = entry_field(kwargs["batch_id"], kwargs["epoch"], kwargs["sample_index"], kwargs["index"])
        now = time.time()
        entry = {
            "task_id": task_id,
            "step": step,
            "kwargs": kwargs,
            "payload": payload,
            "tenant": exc.tenant,
            "model": exc.model,
            "limit": exc.limit,
            "spent": exc.spent,
            "budget": exc.budget,
            "resets_at": exc.resets_at,
            "error": f"{type(exc).__name__}: {exc}",
            "parked_at": now,
        }
        refusal = Refusal.of(exc)
        # Listed first: a releaser that reads the list must never miss a tenant with entries.
        self.redis.sadd(deferring_tenants_key(self.prefix), exc.tenant)
        keys = [*self._keys(exc.tenant), deferred_key(self.prefix, exc.tenant, "blocked")]
        args: list[EncodableT] = [
            field,
            json.dumps(entry, default=repr),
            now,
            _SEPARATOR.join((refusal.model, refusal.limit)),
            json.dumps(refusal.__dict__),
        ]
        return int(self._park(keys=keys, args=args)) == 1

    def put_back(self, tenant: str, entry: DeferredEntry) -> None:
        """Park a claimed entry again as it was (its send failed): it is released with the next ones."""
        raw = json.dumps(entry.data, default=repr)
        pipe = self.redis.pipeline()
        pipe.hsetnx(deferred_key(self.prefix, tenant), entry.field, raw)
        pipe.zadd(deferred_key(self.prefix, tenant, "order"), {entry.field: time.time()}, nx=True)
        pipe.execute()

    def claim(self, tenant: str, field: str) -> DeferredEntry | None:
        """Take the entry ``field`` off the parked ones, for sending; None if another releaser took it."""
        raw = self._claim(keys=self._keys(tenant), args=[field])
        return None if raw is None else DeferredEntry.parse(field, raw)

    def fields(self, tenant: str) -> Iterator[str]:
        """The parked entries' fields of ``tenant``, oldest first, read a chunk per round trip."""
        key = deferred_key(self.prefix, tenant, "order")
        seen: set[str] = set()
        while True:
            chunk = [decode_text(cast(bytes, raw)) for raw in self.redis.zrange(key, 0, CHUNK - 1)]
            fresh = [field for field in chunk if field not in seen]
            if not fresh:
                return
            seen.update(fresh)
            yield from fresh

    def is_parked(self, tenant: str, batch_id: str, epoch: int, index: int, step: int) -> bool:
        """True if the step of that sample is parked under ``tenant`` now."""
        field = entry_field(batch_id, epoch, index, step)
        return bool(self.redis.hexists(deferred_key(self.prefix, tenant), field))

    def entries(self, tenant: str) -> list[DeferredEntry]:
        """Every parked entry of ``tenant`` (unordered), each parsed or with its problem."""
        raw = self.redis.hgetall(deferred_key(self.prefix, tenant))
        return [DeferredEntry.parse(decode_text(field), value) for field, value in raw.items()]

    def count(self, tenant: str) -> int:
        """How many step messages of ``tenant`` are parked now."""
        return int(self.redis.hlen(deferred_key(self.prefix, tenant)))

    def tenants(self) -> list[str]:
        """The tenants that ever deferred a sample, sorted (some may have none parked now)."""
        return sorted(decode_text(raw) for raw in self.redis.smembers(deferring_tenants_key(self.prefix)))

    def refusals(self, tenant: str) -> list[Refusal]:
        """The last refusal of each of ``tenant``'s limits that refused a call (unreadable ones left out)."""
        raw = self.redis.hgetall(deferred_key(self.prefix, tenant, "blocked"))
        refusals = []
        for value in raw.values():
            try:
                data = json.loads(decode_text(value))
                refusals.append(
                    Refusal(
                        str(data["model"]),
                        str(data["limit"]),
                        float(data["spent"]),
                        float(data["budget"]),
                        float(data["resets_at"]),
                        float(data.get("requested", 0.0)),
                    )
                )
            except (ValueError, TypeError, KeyError):
                continue
        return refusals

    def forget_refusals(self, tenant: str, refusals: list[Refusal]) -> None:
        """Drop the recorded refusals that no longer hold (the budget reset or was raised)."""
        if refusals:
            fields = [_SEPARATOR.join((refusal.model, refusal.limit)) for refusal in refusals]
            self.redis.hdel(deferred_key(self.prefix, tenant, "blocked"), *fields)
