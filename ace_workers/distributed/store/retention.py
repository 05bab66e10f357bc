"""Retention: how long each kind of record is kept, and the sweep that trims what is older.

One :class:`RetentionPolicy` (built from the settings by ``WorkerSettings.retention_policy``)
names the bound of every kind of record; :func:`sweep` trims each kind past its bound. The
nightly sweep (beat's ``retention`` entry) and ``ace-workers retention sweep`` run it; the writers
of the label log and the evaluations list keep their count at once, in the write itself.

Batch records are not swept: Redis expires them (ACE_RESULT_TTL_SECONDS after their batch
finished). Erasure records (``forget``) are kept ACE_RETENTION_ERASURE_DAYS.

The sweep is safe to run at any time, twice, or from two places at once: every command reads
or trims one key (each per-skillbook key carries its skillbook's hash tag, so a cluster takes
them as they are), in chunks of at most ``chunk`` entries, and removes only what is past its
bound when it looks, so a second sweep finds nothing left.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import redis
from redis.exceptions import WatchError

from .errors import CorruptDataError
from .keys import SkillbookKeys, console_audit_key, dead_letters_key, erasures_key, registry_key
from .proposals import ProposalStatus, decode_proposal, signature_digest
from .replies import decode_text, optional_text

__all__ = ["CHUNK", "KINDS", "RetentionPolicy", "sweep"]

logger = logging.getLogger(__name__)

# Most entries one command reads or removes: a sweep never blocks Redis for long.
CHUNK = 200
# Attempts at deleting one chunk of decided proposals while writers keep changing the hash.
_ATTEMPTS = 5

# The kinds the sweep trims, in the order it reports them.
DEAD_LETTERS = "dead_letters"
DECIDED_PROPOSALS = "decided_proposals"
AUDIT = "audit"
LABEL_LOG = "label_log"
EVALUATIONS = "evaluations"
ERASURES = "erasures"
KINDS = (DEAD_LETTERS, DECIDED_PROPOSALS, AUDIT, LABEL_LOG, EVALUATIONS, ERASURES)


@dataclass(frozen=True)
class RetentionPolicy:
    """The bound of every swept kind of record; 0 keeps that kind forever."""

    dead_letter_days: float = 30.0  # a letter parked longer ago is dropped
    proposal_days: float = 90.0  # a proposal decided longer ago is dropped; pending ones never
    audit_days: float = 365.0  # console audit entries older than this are dropped
    label_moves: int = 1000  # newest label moves kept per skillbook
    evaluations: int = 200  # newest evaluation reports kept per skillbook
    erasure_days: float = 3650.0  # erasure records (forget) older than this are dropped


def sweep(
    client: redis.Redis,
    prefix: str,
    policy: RetentionPolicy,
    now: datetime,
    *,
    dry_run: bool = False,
    chunk: int = CHUNK,
) -> dict[str, int]:
    """Trim every kind past its bound under ``prefix``; how many records of each kind went.

    ``now`` is timezone-aware. With ``dry_run`` nothing is removed: the counts say what would be.
    """
    counts = dict.fromkeys(KINDS, 0)
    if policy.dead_letter_days:
        counts[DEAD_LETTERS] = _sweep_dead_letters(
            client, dead_letters_key(prefix), now - timedelta(days=policy.dead_letter_days), dry_run, chunk
        )
    if policy.audit_days:
        cutoff = now - timedelta(days=policy.audit_days)
        counts[AUDIT] = _drop_stream_before(client, console_audit_key(prefix), cutoff, dry_run, chunk)
    if policy.erasure_days:
        cutoff = now - timedelta(days=policy.erasure_days)
        counts[ERASURES] = _drop_list_tail_before(client, erasures_key(prefix), cutoff, dry_run)
    for name in _skillbooks(client, prefix):
        keys = SkillbookKeys(name, prefix)
        if policy.proposal_days:
            cutoff = now - timedelta(days=policy.proposal_days)
            counts[DECIDED_PROPOSALS] += _sweep_proposals(client, keys, cutoff, dry_run, chunk)
        if policy.label_moves:
            counts[LABEL_LOG] += _keep_newest_stream(
                client, keys.label_log, policy.label_moves, dry_run, chunk
            )
        if policy.evaluations:
            counts[EVALUATIONS] += _keep_newest_list(
                client, keys.evaluations, policy.evaluations, dry_run, chunk
            )
    return counts


def _skillbooks(client: redis.Redis, prefix: str) -> list[str]:
    """The registered skillbook names (read with SSCAN, a chunk at a time)."""
    return sorted(decode_text(name) for name in client.sscan_iter(registry_key(prefix), count=CHUNK))


# -- dead letters ---------------------------------------------------------------------------


def _sweep_dead_letters(client: redis.Redis, key: str, cutoff: datetime, dry_run: bool, chunk: int) -> int:
    """Drop the letters parked before ``cutoff``; an unreadable or undated letter is kept.

    Letters are appended in the order they are parked, so the walk stops at the first
    dated letter young enough. Each old letter is removed by its value (LREM 1), never by
    position: a concurrent ``dead-letters retry`` removes letters too, and positions shift.
    """
    removed, start = 0, 0
    while True:
        raws: list[bytes] = client.lrange(key, start, start + chunk - 1)  # type: ignore[assignment]
        old: list[bytes] = []
        young_seen = False
        for raw in raws:
            parked = _parked_at(raw)
            if parked is not None and parked >= cutoff:
                young_seen = True
                break
            if parked is not None:
                old.append(raw)
        if not dry_run:
            for raw in old:
                removed += int(client.lrem(key, 1, raw))  # type: ignore[arg-type]  # bytes work
        else:
            removed += len(old)
        if young_seen or len(raws) < chunk:
            return removed
        # What was kept (undated, unreadable) stays ahead of the next chunk.
        start += len(raws) - (0 if dry_run else len(old))


def _parked_at(raw: bytes) -> datetime | None:
    """When a letter was parked, timezone-aware; None when the letter does not say (kept)."""
    try:
        letter = json.loads(raw)
        parked = datetime.fromisoformat(letter["parked_at"])
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    return parked if parked.tzinfo is not None else None


# -- streams (audit, label log) ---------------------------------------------------------------


def _stream_ids(client: redis.Redis, key: str, first: str, last: str, count: int) -> list[str]:
    entries = client.xrange(key, min=first, max=last, count=count) or []
    return [decode_text(entry_id or b"") for entry_id, _ in entries]


def _drop_stream_before(client: redis.Redis, key: str, cutoff: datetime, dry_run: bool, chunk: int) -> int:
    """Drop the entries of stream ``key`` added before ``cutoff`` (an entry id is its time in ms)."""
    before = f"({int(cutoff.timestamp() * 1000)}-0"
    removed, first = 0, "-"
    while True:
        ids = _stream_ids(client, key, first, before, chunk)
        if ids and not dry_run:
            client.xdel(key, *ids)
        removed += len(ids)
        if len(ids) < chunk:
            return removed
        first = f"({ids[-1]}"


def _keep_newest_stream(client: redis.Redis, key: str, kept: int, dry_run: bool, chunk: int) -> int:
    """Drop the oldest entries of stream ``key`` beyond the newest ``kept``.

    Counted once, at the start: entries added meanwhile are newer, so never more than the
    excess seen goes, and the stream never falls below ``kept``.
    """
    excess = int(client.xlen(key)) - kept
    if excess <= 0 or dry_run:
        return max(excess, 0)
    removed, first = 0, "-"
    while removed < excess:
        ids = _stream_ids(client, key, first, "+", min(chunk, excess - removed))
        if not ids:
            break
        removed += int(client.xdel(key, *ids))
        first = f"({ids[-1]}"
    return removed


# -- evaluations ------------------------------------------------------------------------------


def _keep_newest_list(client: redis.Redis, key: str, kept: int, dry_run: bool, chunk: int) -> int:
    """Drop the oldest items (the tail) of list ``key`` beyond the newest ``kept``, ``chunk`` at a time.

    LTRIM keeps a head of at least ``kept``: an item pushed meanwhile lands in the head, so
    it only moves one more old item past the cut.
    """
    before = int(client.llen(key))
    if before <= kept or dry_run:
        return max(before - kept, 0)
    length = before
    while length > kept:
        client.ltrim(key, 0, max(kept, length - chunk) - 1)
        length = int(client.llen(key))
        if length >= before:  # writers push as fast as we trim: the writer's own trim bounds it
            break
    return max(before - length, 0)


# -- erasure records ---------------------------------------------------------------------------


def _drop_list_tail_before(client: redis.Redis, key: str, cutoff: datetime, dry_run: bool) -> int:
    """Drop the records of list ``key`` (newest first, each JSON with an ``at`` time) made before ``cutoff``.

    The list is pushed newest first, so the old ones are its tail: the walk goes from the end
    and stops at the first record young enough (or undated: kept, with all before it).
    """
    old = 0
    while True:
        raw = client.lindex(key, -1 - old)
        if raw is None or not _made_before(raw, cutoff):
            break
        old += 1
    if old and not dry_run:
        # Records are only ever pushed at the head: the tail's old ones are where they were.
        client.ltrim(key, 0, -1 - old)
    return old


def _made_before(raw: Any, cutoff: datetime) -> bool:
    """True for a record whose ``at`` is a timezone-aware time before ``cutoff``."""
    try:
        made = datetime.fromisoformat(json.loads(raw)["at"])
    except (ValueError, TypeError, KeyError, RecursionError):
        return False
    return made.tzinfo is not None and made < cutoff


# -- decided proposals ------------------------------------------------------------------------


def _sweep_proposals(
    client: redis.Redis, keys: SkillbookKeys, cutoff: datetime, dry_run: bool, chunk: int
) -> int:
    """Drop the proposals decided before ``cutoff``; a pending one is never dropped."""
    removed = 0
    for page in _hash_pages(client, keys.proposals, chunk):
        old = [field for field, raw in page.items() if _decided_before(raw, keys, field, cutoff)]
        if old and not dry_run:
            removed += _drop_proposals(client, keys, old, cutoff)
        elif old:
            removed += len(old)
    return removed


def _hash_pages(client: redis.Redis, key: str, chunk: int) -> Iterator[dict[str, Any]]:
    """The fields of hash ``key``, an HSCAN page at a time (a field may come twice: harmless)."""
    cursor = 0
    while True:
        cursor, fields = client.hscan(key, cursor, count=chunk)
        assert isinstance(fields, dict)  # without no_values, HSCAN pairs fields with values
        yield {decode_text(field): raw for field, raw in fields.items()}
        if cursor == 0:
            return


def _decided_before(raw: Any, keys: SkillbookKeys, field: str, cutoff: datetime) -> bool:
    """True for a proposal decided before ``cutoff``; an unreadable one is kept (and logged)."""
    try:
        proposal = decode_proposal(raw, keys.proposals, field)
        if proposal.status is ProposalStatus.PENDING or proposal.decision is None:
            return False
        decided = datetime.fromisoformat(proposal.decision.time)
    except (CorruptDataError, ValueError) as exc:
        logger.warning("retention: %s is kept: %s", keys.proposals, exc)
        return False
    return decided.tzinfo is not None and decided < cutoff


def _drop_proposals(client: redis.Redis, keys: SkillbookKeys, ids: list[str], cutoff: datetime) -> int:
    """Delete the decided proposals ``ids`` in one transaction, checked again under WATCH.

    A merge into an auto-rejected proposal rewrites it: WATCHing the hash makes such a
    race retry, so a proposal is only deleted as it was read. Its signature key goes too
    when it still names it (an auto-rejected proposal keeps one for merging).
    """
    for _ in range(_ATTEMPTS):
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(keys.proposals)  # type: ignore[no-untyped-call]
                raws = pipe.hmget(keys.proposals, ids)
                gone = [
                    (i, decode_proposal(raw, keys.proposals, i))
                    for i, raw in zip(ids, raws, strict=True)
                    if raw is not None and _decided_before(raw, keys, i, cutoff)
                ]
                signatures = [keys.proposal_signature(signature_digest(p)) for _, p in gone]
                if signatures:
                    pipe.watch(*signatures)  # type: ignore[no-untyped-call]
                # One GET each: a cluster pipeline refuses MGET, even of keys of one slot.
                named = [optional_text(pipe.get(key)) for key in signatures]
                pipe.multi()
                if gone:
                    pipe.hdel(keys.proposals, *(i for i, _ in gone))
                for (proposal_id, _), key, name in zip(gone, signatures, named, strict=True):
                    if name == proposal_id:
                        pipe.delete(key)
                pipe.execute()
                return len(gone)
            except WatchError:
                continue
    logger.warning("retention: %s changed %d times while being swept; next sweep", keys.proposals, _ATTEMPTS)
    return 0
