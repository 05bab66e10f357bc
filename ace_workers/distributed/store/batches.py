"""Batches in Redis: how many samples are done or failed, their results and errors.

Every count is guarded by a per-sample marker written with HSETNX in the same
Lua script as the counters, so a task delivered twice is counted once, and a
connection lost mid-record leaves either both or neither. A batch keeps its items when it has more
epochs to run, so the task that finishes an epoch can start the next one even
after the producer has gone.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import redis
from redis.typing import EncodableT, FieldT

from .keys import batch_key
from .replies import decode_text

__all__ = ["BatchState", "BatchStatus", "BatchStore", "sample_key"]

# Marker, record and counters of a finished sample in one atomic step (see the script).
_FINISH_SAMPLE_LUA = (Path(__file__).parent / "finish_sample.lua").read_text(encoding="utf-8")


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
    started: int = 0

    @property
    def in_flight(self) -> int:
        """Samples enqueued and not yet finished (queued or running)."""
        return self.enqueued - self.done - self.failed

    @property
    def queued(self) -> int:
        """Samples enqueued whose first step has not started yet."""
        return max(0, self.enqueued - self.started)

    @property
    def running(self) -> int:
        """Samples whose first step started and which have not finished."""
        return max(0, self.in_flight - self.queued)

    @property
    def state(self) -> BatchState:
        """DONE once every sample of every epoch finished, one way or the other."""
        finished = self.sealed and self.done + self.failed >= self.total
        return BatchState.DONE if finished else BatchState.RUNNING


class BatchStore:
    """Reads and writes batch records in Redis."""

    def __init__(self, client: redis.Redis, *, prefix: str = "ace", ttl_seconds: int) -> None:
        """``ttl_seconds``: the lifetime of a batch's records (ACE_RESULT_TTL_SECONDS)."""
        self.redis = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self._finish_script = client.register_script(_FINISH_SAMPLE_LUA)

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

    def record_started(self, batch_id: str, epoch: int, index: int) -> None:
        """Mark a sample as started (once, however often its first step is delivered)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hsetnx(self._key(batch_id, "started"), sample_key(epoch, index), 1)
        pipe.expire(self._key(batch_id, "started"), self.ttl_seconds)
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
        keys = [self._key(batch_id), self._key(batch_id, "outcomes"), self._key(batch_id, "records")]
        args: list[EncodableT] = [
            sample_key(epoch, index),
            outcome,
            json.dumps({"outcome": outcome, **record}),
            f"finished:e{epoch}",
            self.ttl_seconds,
        ]
        finished = int(self._finish_script(keys=keys, args=args))
        return None if finished < 0 else finished  # None: a redelivered final task, counted already

    def finished_in_epoch(self, batch_id: str, epoch: int) -> int:
        """How many samples of ``epoch`` finished, one way or the other."""
        return int(self.redis.hget(self._key(batch_id), f"finished:e{epoch}") or 0)

    @contextmanager
    def epoch_start_lock(self, batch_id: str, epoch: int, seconds: int) -> Iterator[bool]:
        """Hold the right to send ``epoch``'s samples; yields False if another task holds it.

        It expires after ``seconds``, so a worker killed while sending leaves the rest to
        the redelivery of its task rather than to nobody.
        """
        key = self._key(batch_id, f"starting:e{epoch}")
        token = uuid.uuid4().hex
        held = bool(self.redis.set(key, token, nx=True, ex=seconds))
        try:
            yield held
        finally:
            if held and decode_text(self.redis.get(key) or b"") == token:
                self.redis.delete(key)

    def status(self, batch_id: str) -> BatchStatus:
        """The batch's counters; LookupError naming the batch if it is unknown."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.hgetall(self._key(batch_id))
        pipe.hlen(self._key(batch_id, "started"))
        meta, started = pipe.execute()
        text = {decode_text(k): decode_text(v) for k, v in meta.items()}
        # A counter bumped by a late task after the record expired leaves a hash without its fields.
        if "skillbook" not in text:
            raise LookupError(f"no batch {batch_id!r} (unknown, or expired after {self.ttl_seconds} s)")
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
            started=int(started),
        )

    def records(self, batch_id: str) -> dict[str, dict[str, Any]]:
        """Every finished sample's record, by sample key: outcome plus payload or error."""
        raw = self.redis.hgetall(self._key(batch_id, "records"))
        return {decode_text(k): json.loads(v) for k, v in raw.items()}

    def errors(self, batch_id: str) -> list[dict[str, Any]]:
        """The failure records of the batch, in epoch and sample order."""
        failed = [r for r in self.records(batch_id).values() if r["outcome"] == "failed"]
        return sorted(failed, key=lambda r: (r["epoch"], r["index"]))
