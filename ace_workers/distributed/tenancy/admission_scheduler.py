"""Admission control: a fleet-wide window of samples in flight, shared fairly between tenants.

A batch's samples are not all sent at once: each is *admitted* first. The scheduler (``admit.lua``)
grants a slot while fewer than the window's samples are in flight, to the tenant with work whose
in-flight count after the grant divided by its weight is least, never above the tenant's
``max_in_flight`` (nor the batch's cap). That rule ("least in flight per weight first") is weighted
fair queuing over the window with nothing to keep but the in-flight counts themselves: no
deficit counters to lose or to heal, each backlogged tenant holds its weight's share of the window,
and a tenant that arrives with one sample gets the next free slot. A caller may ask for grants only
once a chunk of slots is free (``least``): a finishing sample does (``leave_and_admit.lua``, its
finish and the grants in one call), so that one hand-off sends several samples. The queues then hold at most a
window of samples, so a newly admitted sample waits behind a window, not behind another tenant's
100,000 traces; the write queues, fed only by admitted samples, interleave tenants the same way.

Everything lives under one hash tag (``{admission}``, Redis Cluster), per batch: its tenant, how
many of its samples were admitted (counted over all its epochs), finished, parked (waiting for
budget), how many may be admitted by now (its limit: the end of its open epoch), and its cap.
What a tenant has in flight is computed from those in the script, never kept as a counter of its
own, so it cannot drift: a batch's finished count only grows to the highest count its finish
script answered (see ``leave_flight.lua``), so a finish told twice frees one slot and a finish never
told is covered by the next one, or by the reconciler's count from the batch record.

That makes most finishes of a tenant alone on the fleet free to go untold: they change no grant
until a chunk is free (none at all once nothing waits for a slot). A finish told answers how far
its batch's next finishes may go untold (``quiet_until``, see ``leave_and_admit.lua``); the batch's
own finish script, which runs for every finish anyway, counts them against that mark, so only the
finish that frees a chunk (and a batch's last in flight) makes admission's round trip, whichever
worker process runs it. Until then the counts here lag the batch record by the untold finishes
(:meth:`AdmissionState.in_flight` counts them in flight); a batch opening has them told first
(:meth:`AdmissionState.take_quiet`), so whoever arrives is granted every free slot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import redis
from redis.typing import EncodableT

from ..lua import read_lua
from ..store.keys import DEFAULT_PREFIX, admission_key
from ..store.replies import decode_text
from .tenants import Tenant

__all__ = ["ADMISSION_PARTS", "AdmissionLoad", "AdmissionState", "Grant", "LeftFlight"]

# The state's keys, in the order every script takes them (see admission_state.lua).
ADMISSION_PARTS = (
    "tenant",
    "admitted",
    "left",
    "parked",
    "limit",
    "cap",
    "per_epoch",
    "ready",
    "seq",
    "parked_samples",
    "quiet",
)


def _admission_lua(name: str) -> str:
    """The admission script ``name`` after the Lua every admission script is built on.

    That is what they share (the state), and the two steps they take (free a slot, grant slots).
    """
    return read_lua(__name__, "admission_state.lua", "free_slot.lua", "grant_slots.lua", name)


# Read once, at import, as the other scripts of the store and of tenancy are.
_ADMIT_LUA = _admission_lua("admit.lua")
_OPEN_BATCH_LUA = _admission_lua("open_batch.lua")
_LEAVE_FLIGHT_LUA = _admission_lua("leave_flight.lua")
_FORGET_BATCH_LUA = _admission_lua("forget_batch.lua")
_LEAVE_AND_ADMIT_LUA = _admission_lua("leave_and_admit.lua")


@dataclass(frozen=True)
class Grant:
    """Admission granted to a batch: it may have sent its samples up to ``admitted`` (over all epochs)."""

    batch_id: str
    admitted: int


class AdmissionState:
    """The fleet's admission state in Redis: per batch what it may send, and what it has in flight."""

    def __init__(self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.redis = client
        self.keys = [admission_key(part, prefix) for part in ADMISSION_PARTS]
        self._admit = client.register_script(_ADMIT_LUA)
        self._open = client.register_script(_OPEN_BATCH_LUA)
        self._leave = client.register_script(_LEAVE_FLIGHT_LUA)
        self._forget = client.register_script(_FORGET_BATCH_LUA)
        self._leave_and_admit = client.register_script(_LEAVE_AND_ADMIT_LUA)

    def open(self, batch_id: str, *, tenant: str, limit: int, per_epoch: int, cap: int | None = None) -> int:
        """Let up to ``limit`` samples of the batch (over all epochs) be admitted; return its admitted count.

        ``cap``: most of its samples in flight at once (None leaves what was set, 0 lifts it).
        The limit only ever grows.
        """
        args: list[EncodableT] = [batch_id, tenant, limit, per_epoch, "" if cap is None else cap]
        return int(self._open(keys=self.keys, args=args))

    def admit(
        self, window: int, tenants: Mapping[str, Tenant], *, most: int | None = None, least: int = 1
    ) -> list[Grant]:
        """Grant slots while fewer than ``window`` samples are in flight; the batches granted, in order.

        ``tenants``: the weight and cap of each tenant (one not named: weight 1, no cap).
        ``most``: at most this many grants in this call (default: the window). ``least``: grant
        nothing unless at least this many slots are free (so one grant covers several samples).
        """
        flat = self._admit(keys=self.keys, args=_admit_args(window, tenants, most, least))
        return _grants(flat)

    def leave_and_admit(
        self,
        batch_id: str,
        *,
        epoch: int,
        finished: int,
        window: int,
        tenants: Mapping[str, Tenant],
        least: int = 1,
    ) -> LeftFlight:
        """A sample finished (as :meth:`leave_flight`), then the free slots are granted (as :meth:`admit`).

        One round trip for what a finishing sample does, and how many of the batch's next finishes
        need not make it (see :class:`LeftFlight`).
        """
        args: list[EncodableT] = [batch_id, epoch, finished, *_admit_args(window, tenants, None, least)]
        flat = self._leave_and_admit(keys=self.keys, args=args)
        return LeftFlight(int(flat[0]), _grants(flat[2:]), int(flat[1]))

    def leave_flight(self, batch_id: str, *, epoch: int, finished: int | None, sample: str = "") -> int:
        """A sample of the batch left flight: it finished, failed, or was parked waiting for budget.

        ``finished``: for a sample that finished or failed, what its batch's finish script answered
        (``BatchStore.record_done``/``record_failure``: how many of ``epoch`` finished); the slot is
        freed once however often the same count is told. None: the sample was parked (it waits for
        budget, holding no slot) until :meth:`reenter_flight`; ``sample`` (its key, ``e1:7``) makes
        that count once however often it is told. Returns the batch's samples in flight after it;
        -1 for a batch admission does not know (sent with admission off, or forgotten).
        """
        if finished is None:
            args: list[EncodableT] = [batch_id, "", 0, 1, sample]
        else:
            args = [batch_id, epoch, finished, 0, ""]
        return int(self._leave(keys=self.keys, args=args))

    def reenter_flight(self, batch_id: str, *, sample: str = "") -> int:
        """A parked sample of the batch was released and runs again: it holds a slot once more.

        ``sample``: its key, as it was parked (a sample not parked under it then takes no slot).
        Returns the batch's samples in flight after it (-1 for a batch admission does not know).
        The slot is taken even if the window is full: the sample was admitted before.
        """
        return int(self._leave(keys=self.keys, args=[batch_id, "", 0, -1, sample]))

    def forget(self, batch_id: str) -> bool:
        """Drop a finished, cancelled or expired batch; its slots free. False if it was not known."""
        return bool(self._forget(keys=self.keys, args=[batch_id]))

    def admitted(self, batch_id: str) -> int:
        """How many samples of the batch were admitted, over all its epochs (0 if unknown)."""
        raw = self.redis.hget(self.keys[1], batch_id)
        try:
            return int(decode_text(raw)) if raw is not None else 0
        except ValueError:
            return 0  # not a number: as the scripts read it

    def batches(self) -> list[str]:
        """The batches admission knows (open, and not yet forgotten)."""
        return sorted(decode_text(raw) for raw in self.redis.hkeys(self.keys[0]))

    def take_quiet(self) -> list[str]:
        """The batches whose finishes may go untold (see :class:`LeftFlight`), no longer kept as such.

        Whoever takes them ends their marks and tells admission what their finishes reached.
        """
        pipe = self.redis.pipeline(transaction=True)
        pipe.hkeys(self.keys[10])
        pipe.delete(self.keys[10])
        batches, _ = pipe.execute()
        return sorted(decode_text(raw) for raw in batches)

    def in_flight(self) -> dict[str, int]:
        """Samples in flight per tenant (admitted, not finished, not parked), as the scheduler counts them.

        A lone tenant's untold finishes (see :class:`LeftFlight`) count until a later finish tells them.
        """
        pipe = self.redis.pipeline(transaction=True)
        for key in self.keys[:4]:
            pipe.hgetall(key)
        tenants, admitted, left, parked = (
            {decode_text(k): decode_text(v) for k, v in raw.items()} for raw in pipe.execute()
        )
        counts: dict[str, int] = {}
        for batch, tenant in tenants.items():
            flying = max(
                0, _number(admitted.get(batch)) - _number(left.get(batch)) - _number(parked.get(batch))
            )
            counts[tenant] = counts.get(tenant, 0) + flying
        return counts

    def load(self) -> AdmissionLoad:
        """Samples in flight across the fleet, and samples waiting to be admitted (one transaction)."""
        pipe = self.redis.pipeline(transaction=True)
        for key in self.keys[:5]:
            pipe.hgetall(key)
        tenants, admitted, left, parked, limit = (
            {decode_text(k): decode_text(v) for k, v in raw.items()} for raw in pipe.execute()
        )
        flying = waiting = 0
        for batch in tenants:
            done = _number(admitted.get(batch))
            flying += max(0, done - _number(left.get(batch)) - _number(parked.get(batch)))
            waiting += max(0, _number(limit.get(batch)) - done)
        return AdmissionLoad(in_flight=flying, waiting=waiting)


class LeftFlight(NamedTuple):
    """What :meth:`AdmissionState.leave_and_admit` answers for a finished sample."""

    flying: int
    """The batch's samples in flight after the finish (-1 for a batch admission does not know)."""
    grants: list[Grant]
    """The batches granted slots, in order."""
    quiet_until: int
    """The batch's finished count (over all epochs) up to which its finishes may go untold: while its
    tenant alone has work they change no grant until a chunk (``least``) is free, or none at all
    once no batch waits for a slot; never past its last sample in flight. 0: tell each one."""


@dataclass(frozen=True)
class AdmissionLoad:
    """How busy admission is: samples in flight, and samples of open epochs not yet admitted."""

    in_flight: int
    waiting: int


def _admit_args(window: int, tenants: Mapping[str, Tenant], most: int | None, least: int) -> list[EncodableT]:
    """The admit arguments: window, tenant policies, most grants, fewest free slots."""
    policies = {name: [t.weight, t.max_in_flight or 0] for name, t in tenants.items()}
    return [window, json.dumps(policies), window if most is None else most, least]


def _grants(flat: list[Any]) -> list[Grant]:
    """The grants of a script's flat answer (batch id, admitted count, ...)."""
    return [Grant(decode_text(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2)]


def _number(raw: str | None) -> int:
    """A count read back from Redis; what is not a whole number counts as 0, as the scripts read it."""
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0
