"""The samples of a batch that wait for their tenant's budget: the batch's ``waiting`` marks.

A step refused for a spent budget is parked (see ``tenancy/deferred_samples.py``) and its sample
marked here; the mark goes when one of the sample's steps starts again (record_progress.lua)
or the sample finishes (finish_sample.lua). ``BatchStatus.waiting_for_budget`` counts the
marks, so ``status`` shows these samples neither as queued nor as running.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import redis

from ..lua import read_lua
from .batches import parse_sample_key, sample_key
from .errors import BatchCancelledError, BatchNotFoundError
from .keys import batch_key
from .replies import decode_text

__all__ = ["WaitingMark", "WaitingSamples"]

_MARK_LUA = read_lua(__name__, "mark_waiting.lua")
_NO_BATCH = -2
_CANCELLED = -3


@dataclass(frozen=True)
class WaitingMark:
    """One waiting sample: which tenant's budget it waits for, at which step, since when."""

    epoch: int
    index: int
    tenant: str
    step: int
    since: float

    @property
    def sample(self) -> str:
        """The sample's key in its batch (``eN:I``)."""
        return sample_key(self.epoch, self.index)


class WaitingSamples:
    """Reads and writes the waiting marks of batches."""

    def __init__(self, client: redis.Redis, *, prefix: str = "ace", ttl_seconds: int = 0) -> None:
        """``ttl_seconds``: how long a batch's records live (named in BatchNotFoundError)."""
        self.redis = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self._mark_script = client.register_script(_MARK_LUA)

    def mark(self, batch_id: str, epoch: int, index: int, *, tenant: str, step: int) -> bool:
        """Mark a sample as waiting at step ``step`` for ``tenant``'s budget; False if it finished already.

        Raises:
            BatchNotFoundError: the batch has no record; nothing was written.
            BatchCancelledError: the batch was cancelled; its samples wait for nothing.
        """
        keys = [batch_key(self.prefix, batch_id, part) for part in ("", "outcomes", "waiting")]
        mark = json.dumps({"tenant": tenant, "step": step, "since": time.time()})
        answer = int(self._mark_script(keys=keys, args=[sample_key(epoch, index), mark]))
        if answer == _NO_BATCH:
            raise BatchNotFoundError(batch_id, self.ttl_seconds)
        if answer == _CANCELLED:
            raise BatchCancelledError(batch_id)
        return answer == 1

    def marks(self, batch_id: str) -> list[WaitingMark]:
        """Every waiting sample of the batch, in epoch and sample order; a mark not of ours is left out."""
        raw = self.redis.hgetall(batch_key(self.prefix, batch_id, "waiting"))
        marks = []
        for field, value in raw.items():
            try:
                epoch, index = parse_sample_key(decode_text(field))
                data = json.loads(decode_text(value))
                marks.append(
                    WaitingMark(epoch, index, str(data["tenant"]), int(data["step"]), float(data["since"]))
                )
            except (ValueError, TypeError, KeyError):
                continue  # what a marker cannot say is not counted on: the reconciler treats it as unmarked
        return sorted(marks, key=lambda mark: (mark.epoch, mark.index))

    def touch(self, batch_id: str, epoch: int, index: int) -> None:
        """Restart a waiting sample's progress clock (it is being sent again; not lost for a while)."""
        now = time.time()
        pipe = self.redis.pipeline()
        pipe.zadd(batch_key(self.prefix, batch_id, "progress"), {sample_key(epoch, index): now}, xx=True)
        pipe.execute()
