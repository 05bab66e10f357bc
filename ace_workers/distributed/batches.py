"""Batches in Redis: how many samples are done or failed, their results and errors.

Every count is guarded by a per-sample marker written with HSETNX, so a task
delivered twice is counted once. A batch keeps its items when it has more
epochs to run, so the task that finishes an epoch can start the next one even
after the producer has gone.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any

import redis
from redis.typing import EncodableT, FieldT

from .keys import batch_key

__all__ = ["BatchState", "BatchStatus", "BatchStore", "sample_key"]


class BatchState(str, Enum):
    """Where a batch is in its life."""

    RUNNING = "running"
    DONE = "done"


def sample_key(epoch: int, index: int) -> str:
    """The id of one sample of one epoch inside its batch."""
    return f"e{epoch}:{index}"


@dataclass
class BatchStatus:
    """A batch's progress."""

    batch_id: str
    skillbook: str
    recipe: str
    epochs: int
    per_epoch: int
    total: int
    enqueued: int
    done: int
    failed: int
    epoch: int
    skills_at_start: int
    elapsed_seconds: float
    sealed: bool = True

    @property
    def in_flight(self) -> int:
        """Samples enqueued and not yet finished (queued or running)."""
        return self.enqueued - self.done - self.failed

    @property
    def state(self) -> BatchState:
        """DONE once every sample of every epoch finished, one way or the other."""
        finished = self.sealed and self.done + self.failed >= self.total
        return BatchState.DONE if finished else BatchState.RUNNING


class BatchStore:
    """Reads and writes batch records in Redis."""

    def __init__(self, client: redis.Redis, *, prefix: str = "ace", ttl_seconds: int = 7 * 86400) -> None:
        self.redis = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds

    def _key(self, batch_id: str, part: str = "") -> str:
        return batch_key(self.prefix, batch_id, part)

    def create(
        self,
        batch_id: str,
        *,
        skillbook: str,
        recipe: str,
        per_epoch: int,
        epochs: int,
        skills_at_start: int,
        items: list[dict[str, Any]] | None = None,
    ) -> None:
        """Record a new batch; ``items`` (payloads) are kept only when later epochs need them."""
        meta: dict[FieldT, EncodableT] = {
            "skillbook": skillbook,
            "recipe": recipe,
            "per_epoch": per_epoch,
            "epochs": epochs,
            "total": per_epoch * epochs,
            "enqueued": 0,
            "done": 0,
            "failed": 0,
            "epoch": 1,
            "skills_at_start": skills_at_start,
            # An input of unknown length is sealed once the producer has sent all of it.
            "sealed": int(per_epoch > 0),
            "created": time.time(),
        }
        pipe = self.redis.pipeline()
        pipe.hset(self._key(batch_id), mapping=meta)
        pipe.expire(self._key(batch_id), self.ttl_seconds)
        if items:
            pipe.rpush(self._key(batch_id, "items"), *(json.dumps(item) for item in items))
            pipe.expire(self._key(batch_id, "items"), self.ttl_seconds)
        pipe.execute()

    def seal(self, batch_id: str, per_epoch: int) -> None:
        """Fix the size of a batch whose input length was unknown until it was all sent."""
        self.redis.hset(
            self._key(batch_id), mapping={"per_epoch": per_epoch, "total": per_epoch, "sealed": 1}
        )

    def exists(self, batch_id: str) -> bool:
        """True if the batch is known (and not expired)."""
        return bool(self.redis.exists(self._key(batch_id)))

    def items(self, batch_id: str) -> list[dict[str, Any]]:
        """The stored input payloads of a multi-epoch batch."""
        return [json.loads(raw) for raw in self.redis.lrange(self._key(batch_id, "items"), 0, -1)]

    def add_enqueued(self, batch_id: str, count: int, epoch: int) -> None:
        """Count ``count`` more samples as enqueued, for ``epoch``."""
        pipe = self.redis.pipeline()
        pipe.hincrby(self._key(batch_id), "enqueued", count)
        pipe.hset(self._key(batch_id), "epoch", epoch)
        pipe.execute()

    def record_done(self, batch_id: str, epoch: int, index: int, payload: dict[str, Any]) -> int | None:
        """Record a finished sample; return how many of its epoch finished, None if already recorded."""
        return self._finish(batch_id, epoch, index, "done", {"payload": payload})

    def record_failure(
        self,
        batch_id: str,
        epoch: int,
        index: int,
        *,
        step: str,
        error: str,
        traceback: str = "",
        sample: Any = None,
    ) -> int | None:
        """Record a failed sample with the step, the error, a traceback summary and its input sample."""
        record = {
            "step": step,
            "error": error,
            "traceback": traceback,
            "epoch": epoch,
            "index": index,
            "sample": sample,
        }
        return self._finish(batch_id, epoch, index, "failed", record)

    def _finish(
        self, batch_id: str, epoch: int, index: int, outcome: str, record: dict[str, Any]
    ) -> int | None:
        key = sample_key(epoch, index)
        if not self.redis.hsetnx(self._key(batch_id, "outcomes"), key, outcome):
            return None  # a redelivered final task: counted already
        pipe = self.redis.pipeline()
        pipe.hset(self._key(batch_id, "records"), key, json.dumps({"outcome": outcome, **record}))
        pipe.hincrby(self._key(batch_id), outcome, 1)
        pipe.hincrby(self._key(batch_id), f"finished:e{epoch}", 1)
        for part in ("outcomes", "records"):
            pipe.expire(self._key(batch_id, part), self.ttl_seconds)
        _, _, finished_in_epoch, _, _ = pipe.execute()
        return int(finished_in_epoch)

    def status(self, batch_id: str) -> BatchStatus:
        """The batch's counters; LookupError naming the batch if it is unknown."""
        meta = self.redis.hgetall(self._key(batch_id))
        if not meta:
            raise LookupError(f"no batch {batch_id!r} (unknown, or expired after {self.ttl_seconds} s)")
        text = {_text(k): _text(v) for k, v in meta.items()}
        return BatchStatus(
            batch_id=batch_id,
            skillbook=text["skillbook"],
            recipe=text["recipe"],
            epochs=int(text["epochs"]),
            per_epoch=int(text["per_epoch"]),
            total=int(text["total"]),
            enqueued=int(text["enqueued"]),
            done=int(text["done"]),
            failed=int(text["failed"]),
            epoch=int(text["epoch"]),
            skills_at_start=int(text["skills_at_start"]),
            elapsed_seconds=time.time() - float(text["created"]),
            sealed=text.get("sealed", "1") == "1",
        )

    def records(self, batch_id: str) -> dict[str, dict[str, Any]]:
        """Every finished sample's record, by sample key: outcome plus payload or error."""
        raw = self.redis.hgetall(self._key(batch_id, "records"))
        return {_text(k): json.loads(v) for k, v in raw.items()}

    def errors(self, batch_id: str) -> list[dict[str, Any]]:
        """The failure records of the batch, in epoch and sample order."""
        failed = [r for r in self.records(batch_id).values() if r["outcome"] == "failed"]
        return sorted(failed, key=lambda r: (r["epoch"], r["index"]))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
