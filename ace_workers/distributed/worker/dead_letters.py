"""The dead-letter list: samples whose step failed for good, read and sent back without trusting them.

A letter holds what a task message held, and a message may have been crafted by
whoever can write to the broker. Reading a letter imports nothing: its recipe is
looked up by name in this process's own configuration, like a worker's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import redis

from ...errors import AceError
from ..settings import WorkerSettings, env_name
from ..store.batches import sample_key, wrong_step_kwargs
from ..store.errors import BatchCancelledError
from ..store.keys import dead_letters_key
from ..tenancy.tenants import TenantRegistry

# Types only: reading and filtering letters (``dead-letters list``) loads no worker runtime.
if TYPE_CHECKING:
    from .dispatch import Dispatcher
    from .runtime import WorkerRuntime

__all__ = [
    "OWNER_ON_RETRY",
    "DeadLetter",
    "LetterFilter",
    "RetryReport",
    "park_dead_letter",
    "parse_since",
    "read_dead_letters",
    "retry_dead_letters",
]

logger = logging.getLogger(__name__)

# A letter's field: sent back as its skillbook's owner now (see park_dead_letter), read by _send.
OWNER_ON_RETRY = "owner_on_retry"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class DeadLetter:
    """One parked message as stored (``raw``), and what could be read of it."""

    position: int
    raw: bytes
    letter: dict[str, Any] | None
    problem: str | None = None  # why it cannot be sent back as it is

    @property
    def step(self) -> str:
        """The failed step's name, or '?' for an unreadable letter."""
        return str((self.letter or {}).get("step", "?"))

    @property
    def parked_at(self) -> datetime | None:
        """When the letter was parked; None for a letter parked before letters had the time."""
        text = (self.letter or {}).get("parked_at")
        try:
            return datetime.fromisoformat(text) if isinstance(text, str) else None
        except ValueError:
            return None

    def kwarg(self, name: str) -> Any:
        """One of the failed task's kwargs (``batch_id``, ``skillbook``, ...), or None."""
        kwargs = (self.letter or {}).get("kwargs")
        return kwargs.get(name) if isinstance(kwargs, dict) else None

    def to_dict(self) -> dict[str, Any]:
        """What a listing shows of the letter, as JSON: an unreadable one has a problem, no step."""
        if self.letter is None:
            return {"position": self.position, "problem": self.problem}
        parked = self.parked_at
        return {
            "position": self.position,
            "step": self.step,
            "error": self.letter.get("error"),
            "batch_id": self.kwarg("batch_id"),
            "skillbook": self.kwarg("skillbook"),
            "parked_at": parked.isoformat() if parked else None,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class LetterFilter:
    """Which letters a listing or a retry takes: those of a batch, of a skillbook, parked since a time.

    Each given condition must hold; none given takes every letter. A letter parked before
    letters had a time (no ``parked_at``) never matches ``since``.
    """

    batch_id: str | None = None
    skillbook: str | None = None
    since: datetime | None = None  # timezone-aware

    def __call__(self, letter: DeadLetter) -> bool:
        if self.batch_id is not None and letter.kwarg("batch_id") != self.batch_id:
            return False
        if self.skillbook is not None and letter.kwarg("skillbook") != self.skillbook:
            return False
        if self.since is not None:
            parked = letter.parked_at
            return parked is not None and parked.tzinfo is not None and parked >= self.since
        return True


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The time a ``since`` filter names, timezone-aware: ``now`` minus a duration, or an ISO time.

    Raises:
        ValueError: ``text`` is neither a duration (30s, 30m, 2h, 1d) nor an ISO time.
    """
    now = now or datetime.now(UTC)
    duration = _DURATION.fullmatch(text.strip())
    if duration:
        return now - timedelta(seconds=float(duration[1]) * _UNIT_SECONDS[duration[2]])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a duration (30s, 30m, 2h, 1d) nor an ISO time (2025-05-01T12:00)"
        ) from None
    return when if when.tzinfo is not None else when.astimezone()  # no offset: this machine's time


@dataclass
class RetryReport:
    """What ``retry_dead_letters`` did: letters sent back, and those left in place with the reason."""

    sent: int = 0
    kept: list[tuple[DeadLetter, str]] = field(default_factory=list)


def park_dead_letter(
    runtime: WorkerRuntime,
    *,
    task_id: str | None,
    step: str,
    kwargs: dict[str, Any],
    payload: Any,
    error: str,
    owner_on_retry: bool = False,
) -> None:
    """Append a letter for a sample that failed for good at ``step``, and count it.

    ``parked_at`` (ISO 8601, UTC) lets ``dead-letters list/retry --since`` pick recent letters.
    ``owner_on_retry``: the sample failed because its tenant was removed (``tenant remove
    --fail-waiting``); a retry sends it as the tenant that owns its skillbook then, not as the
    batch's tenant, which owns nothing any more.
    """
    letter: dict[str, Any] = {
        "task_id": task_id,
        "step": step,
        "kwargs": kwargs,
        "payload": payload,
        "error": error,
        "parked_at": datetime.now(UTC).isoformat(),
    }
    if owner_on_retry:
        letter[OWNER_ON_RETRY] = True
    runtime.redis.rpush(dead_letters_key(runtime.settings.queue_prefix), json.dumps(letter, default=repr))
    runtime.metrics.observe_dead_letter(step)


class LetterSource(Protocol):
    """Where letters are read: a worker runtime, or a client's FleetClient (operations/fleet.py)."""

    @property
    def redis(self) -> redis.Redis: ...

    @property
    def settings(self) -> WorkerSettings: ...


def read_dead_letters(
    runtime: LetterSource, matches: Callable[[DeadLetter], bool] | None = None
) -> list[DeadLetter]:
    """Every parked letter (or those ``matches`` takes), oldest first; one not of ours says why."""
    key = dead_letters_key(runtime.settings.queue_prefix)
    raws: list[bytes] = runtime.redis.lrange(key, 0, -1)  # type: ignore[assignment]
    letters = [_parse(position, raw) for position, raw in enumerate(raws)]
    return letters if matches is None else [letter for letter in letters if matches(letter)]


def retry_dead_letters(
    dispatch: Dispatcher, matches: Callable[[DeadLetter], bool] | None = None
) -> RetryReport:
    """Send every parked letter (or those ``matches`` takes) back to its failed step, then remove it.

    What cannot be sent is kept, and so is every letter ``matches`` does not take.

    Sent first, removed after: a crash in between leaves the letter parked, and
    sending it again is harmless (a step's writes are idempotent). A letter whose
    recipe this process does not know, whose batch no longer exists, or that does
    not parse, stays where it is.

    Raises:
        FleetSettingsMismatch: a running worker has other recipe settings than this process;
            nothing was sent.
    """
    # Imported here: reading letters (``dead-letters list``) needs no Celery.
    from .fleet import check_fleet_agrees

    runtime = dispatch.runtime
    check_fleet_agrees(runtime)  # sent back to workers that would fail them again, they would park again
    key = dead_letters_key(runtime.settings.queue_prefix)
    report = RetryReport()
    # Only what is parked now: a retried step that fails again parks a new letter behind these.
    for letter in read_dead_letters(runtime, matches):
        problem = letter.problem or _send(dispatch, letter)
        if problem is not None:
            report.kept.append((letter, problem))
            continue
        runtime.redis.lrem(key, 1, letter.raw)  # type: ignore[arg-type]  # redis-py types it str; bytes work
        report.sent += 1
    return report


def _send(dispatch: Dispatcher, letter: DeadLetter) -> str | None:
    """Resume the letter's chain at its failed step; the reason if it cannot be.

    The sample is reopened in its batch first (failed -> running), so the batch counts it
    once, as done or failed again, when the retry's last step finishes.
    """
    assert letter.letter is not None
    runtime = dispatch.runtime
    kwargs = letter.letter["kwargs"]
    batch_id, epoch, index = kwargs["batch_id"], kwargs["epoch"], kwargs["sample_index"]
    if not runtime.batches.exists(batch_id):
        # Its steps would be refused by the workers and parked again: keep the letter, say why.
        return (
            f"batch {batch_id!r} no longer exists (a batch's records expire "
            f"{env_name('result_ttl_seconds')} after it finished); the letter stays parked"
        )
    try:
        from .chains import sample_chain  # with Celery, only when sending

        chain = sample_chain(
            dispatch,
            letter.letter["payload"],
            recipe=kwargs["recipe"],
            skillbook=kwargs["skillbook"],
            batch_id=batch_id,
            epoch=epoch,
            sample_index=index,
            start=kwargs["index"],
            tenant=_retry_tenant(runtime, letter, batch_id),
        )
        reopened = runtime.batches.reopen(batch_id, epoch, index)
    except BatchCancelledError as exc:
        return f"{exc}; the letter stays parked"
    except (AceError, ValueError) as exc:
        return str(exc)
    if reopened:
        # Should this send be lost, the reopened sample is among the batch's unfinished ones, and
        # the reconciler sends it again.
        dispatch.send_chain(chain)
    else:
        logger.info(
            "sample %s of batch %s is not failed (done, or sent again already): its letter is removed unsent",
            sample_key(epoch, index),
            batch_id,
        )
    return None


def _retry_tenant(runtime: WorkerRuntime, letter: DeadLetter, batch_id: str) -> str:
    """The tenant a letter is sent back as: its batch's, as it was sent with (not whatever tenant its
    message named); for a sample failed because its tenant was removed, its skillbook's owner now."""
    assert letter.letter is not None
    if letter.letter.get(OWNER_ON_RETRY) is True:
        # Read now, not from a cache: the removal that failed it is seconds old.
        return TenantRegistry(runtime.redis, prefix=runtime.settings.queue_prefix).tenant_of(
            letter.kwarg("skillbook")
        )
    return runtime.batches.status(batch_id).tenant


def _parse(position: int, raw: bytes) -> DeadLetter:
    try:
        letter = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        return DeadLetter(position, raw, None, f"not JSON ({exc})")
    if not isinstance(letter, dict) or not isinstance(letter.get("kwargs"), dict):
        return DeadLetter(position, raw, None, "not a dead letter (no kwargs object)")
    kwargs = letter["kwargs"]
    wrong = wrong_step_kwargs(kwargs)
    if wrong:
        return DeadLetter(position, raw, letter, f"kwargs missing or of the wrong type: {', '.join(wrong)}")
    if not isinstance(letter.get("payload"), dict):
        return DeadLetter(position, raw, letter, "no payload object")
    if kwargs["index"] < 0:
        return DeadLetter(position, raw, letter, f"step index {kwargs['index']} is negative")
    return DeadLetter(position, raw, letter)
