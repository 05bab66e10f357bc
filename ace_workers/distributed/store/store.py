"""The versioned Redis skillbook store: compare-and-set applies costing O(touched skills).

Every write follows one shape (docs/architecture.md, "How the store writes to
Redis"): WATCH the version key, read what the write depends on, MULTI, write and
bump the version, append the change to the change log, EXEC. A WatchError means another writer
committed in between: the attempt is thrown away and retried with jittered
backoff, up to ``max_attempts``, then VersionConflict.

An apply reads only the skills its batch names, the content-index fields its
ADDs look up, the skills those fields list and the ids it allocates (see
planning.py), so its cost does not grow with the skillbook. Snapshots read
everything, in one MULTI, and are cached per version.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

import redis
from redis.client import Pipeline

from ...core.consolidation import ConsolidationBatch, ConsolidationReport
from ...core.context import SkillbookView
from ...core.lifecycle_rules import LifecycleAction, StaleRule
from ...core.skill import SimilarityDecision, Skill
from ...core.skill_provenance import DEFAULT_KEEP, bounded_occurrences, check_keep
from ...core.skillbook import ApplyReport, Skillbook
from ...core.updates import UpdateBatch
from .change_digest import ChangeDigest
from .changelog import ChangeKind, ChangeRecord, SkillImage, aggregate_diff, images_at_start, stream_id
from .compact_snapshots import CompactSnapshots
from .digest_reads import read_change_digests
from .errors import CorruptDataError, UnknownSkillbookError, VersionConflict, VersionRangeError
from .evaluations import SkillbookEvaluations
from .keys import (
    DEFAULT_PREFIX,
    META_INCARNATION,
    META_NEXT_ID,
    STAT_CONFLICTS,
    STATS_FIELDS,
    SkillbookKeys,
    decision_field,
    registry_key,
    validate_skillbook_name,
)
from .labels import SkillbookLabels
from .lifecycle_writes import LifecycleResult, PrunePlan, SkillbookLifecycle
from .planning import (
    SkillReads,
    count_active,
    decode_stored_skill,
    log_report,
    skill_field,
    skill_order_key,
    split_provenance,
)
from .replies import (
    STREAM_PAGE,
    checked_reads,
    decode_int,
    decode_json,
    decode_text,
    execute_reads,
    optional_text,
    reading,
    stream_newest_first,
)
from .retention import RetentionPolicy
from .review import SkillbookReview, is_review_of_skills
from .snapshots import SnapshotCache, advance_snapshot, default_snapshot_cache
from .transactions import (
    META_ACTIVE_SKILLS,
    ImportPayload,
    SkillbookWrites,
    StoreApplyResult,
    StoreConsolidationResult,
    dump_json,
    is_stale,
    read_changes,
    records_of,
    records_touching,
)

__all__ = [
    "DEFAULT_IDEMPOTENCY_TTL",
    "DEFAULT_MAX_SKILLS",
    "RedisSkillbookStore",
    "StoreApplyResult",
    "StoreObserver",
    "advances_in_place",
    "list_skillbooks",
    "read_registry",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_IDEMPOTENCY_TTL = 7 * 24 * 3600  # seconds an idempotency key is remembered
DEFAULT_MAX_SKILLS = 100_000  # active skills an apply may grow a skillbook to (ACE_MAX_SKILLBOOK_SKILLS)
_BACKOFF_BASE = 0.005  # seconds; doubled per failed attempt, full jitter
_BACKOFF_CAP = 0.2
# A snapshot further behind than this many versions is read whole rather than brought forward.
_MAX_INCREMENTAL_VERSIONS = 256
# A reader that brought the persisted compact snapshot forward through more versions than
# this writes the newer one: a fresh reader then never has far to go, nor falls out of reach.
_COMPACT_REFRESH_VERSIONS = 64
_LAST = 2**62  # sorts a skill whose stored order is unknown after every known one
# Versions a cached snapshot is brought forward through: they change skills in place or add
# them at the end, as their after-images say (a lifecycle change only rewrites named skills).
_ADVANCED_KINDS = frozenset({ChangeKind.APPLY, ChangeKind.LIFECYCLE})


def list_skillbooks(client: redis.Redis, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Names of the skillbooks stored under ``prefix``, sorted.

    Raises:
        CorruptDataError: the registry is not a set, or lists a name no skillbook can have.
    """
    names, unreadable = read_registry(client, prefix)
    for error in unreadable.values():
        raise error
    return names


def read_registry(
    client: redis.Redis, prefix: str = DEFAULT_PREFIX
) -> tuple[list[str], dict[str, CorruptDataError]]:
    """The skillbook names the registry lists, sorted; and each member no skillbook can have, with its error.

    For a list shown to everyone: one bad member is named, not a reason to show nothing.

    Raises:
        CorruptDataError: the registry is not a set.
    """
    key = registry_key(prefix)
    with reading(key):
        members = sorted(decode_text(name) for name in client.smembers(key))
    names: list[str] = []
    unreadable: dict[str, CorruptDataError] = {}
    for name in members:
        try:
            validate_skillbook_name(name)
        except ValueError:
            unreadable[name] = CorruptDataError(key, f"lists {name!r}, which cannot name a skillbook")
        else:
            names.append(name)
    return names, unreadable


def advances_in_place(record: ChangeRecord) -> bool:
    """True for a change a snapshot (or what is derived from one) can be brought forward through.

    Such a change rewrites skills in place or adds them at the end, as its
    after-images say: an apply, a lifecycle change, an approved update proposal
    (a rejection or a policy change touches no skill). Rollbacks, imports,
    consolidations and similarity decisions may move, drop or decide more: read whole.
    """
    return record.kind in _ADVANCED_KINDS or is_review_of_skills(record)


class StoreObserver(Protocol):
    """Told what the store's counters count, as it happens (the worker's metrics implement it)."""

    def on_conflict(self, skillbook: str, operation: str) -> None:
        """A write attempt lost a compare-and-set race."""
        ...

    def on_apply(self, skillbook: str, result: StoreApplyResult) -> None:
        """An apply finished: applied (maybe stale, maybe with skipped operations) or a duplicate delivery."""
        ...


DEFAULT_RETENTION = RetentionPolicy()


class RedisSkillbookStore:
    """One named skillbook in Redis: versioned, with a change log, written by compare-and-set.

    Safe to share between threads (each call uses its own pipeline). Many
    named skillbooks can share one Redis; all keys of one live in one
    Redis Cluster hash slot (see keys.py). An ``observer`` (a worker's
    metrics) is told of every lost race and every finished apply.
    """

    def __init__(
        self,
        client: redis.Redis,
        name: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_attempts: int = 10,
        changelog_maxlen: int = 10_000,
        idempotency_ttl: int = DEFAULT_IDEMPOTENCY_TTL,
        max_skills: int = DEFAULT_MAX_SKILLS,
        snapshot_cache: SnapshotCache | None = None,
        observer: StoreObserver | None = None,
        provenance_keep: int = DEFAULT_KEEP,
        retention: RetentionPolicy = DEFAULT_RETENTION,
    ) -> None:
        for option, value in (
            ("max_attempts", max_attempts),
            ("changelog_maxlen", changelog_maxlen),
            ("idempotency_ttl", idempotency_ttl),
            ("max_skills", max_skills),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{option} must be a positive int, got {value!r}")
        self.keys = SkillbookKeys(name, prefix)
        self.provenance_keep = check_keep(provenance_keep)
        self.retention = retention  # the label log's and evaluations' bounds, kept by their writers
        self.max_attempts = max_attempts
        self.changelog_maxlen = changelog_maxlen
        self.idempotency_ttl = idempotency_ttl
        self.max_skills = max_skills
        self._redis = client
        self._cache = snapshot_cache if snapshot_cache is not None else default_snapshot_cache()
        self._observer = observer
        self._writes = SkillbookWrites(
            client,
            self.keys,
            changelog_maxlen=changelog_maxlen,
            idempotency_ttl=idempotency_ttl,
            max_skills=max_skills,
            provenance_keep=self.provenance_keep,
        )
        self._compact = CompactSnapshots(client, self.keys)
        self._lifecycle = SkillbookLifecycle(client, self._writes, cas=self._cas, snapshot=self.snapshot)

    @property
    def name(self) -> str:
        """The skillbook's name."""
        return self.keys.name

    def __repr__(self) -> str:
        return f"RedisSkillbookStore({self.name!r}, prefix={self.keys.prefix!r})"

    @property
    def review(self) -> SkillbookReview:
        """This skillbook's review policy and proposals: propose, list, approve, reject (review.py)."""
        return SkillbookReview(self._redis, self.keys, self._writes, self._cas)

    # -- reads ---------------------------------------------------------------------------
    def version(self) -> int:
        """The current version; 0 for a skillbook never written."""
        with reading(self.keys.version):
            return decode_int(self._redis.get(self.keys.version), self.keys.version)

    def exists(self) -> bool:
        """True once the skillbook has been written at least once (and not deleted)."""
        return bool(self._redis.exists(self.keys.version))

    def snapshot(self) -> tuple[int, Skillbook]:
        """The version and a fresh, mutable Skillbook read consistently in one transaction.

        Its skills carry their provenance (occurrences and totals), which the cached
        snapshots a worker reads leave out.
        """
        version, _, book = self._read_snapshot(with_provenance=True)
        return version, book

    def read_skill(self, skill_id: str) -> tuple[int, dict[str, Any] | None]:
        """The version and one skill's file-format dict with its provenance (None: no such skill).

        Read in one transaction, for the cost of that skill alone (``skillbook why``).
        """
        keys = self.keys
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.get(keys.version)
            pipe.hget(keys.skills, skill_id)
            pipe.hget(keys.provenance, skill_id)
            raw_version, raw_skill, raw_provenance = execute_reads(
                pipe, [keys.version, keys.skills, keys.provenance]
            )
        reads = SkillReads(keys.skills)
        reads.add_skill(skill_id, raw_skill)
        reads.add_provenance(skill_id, raw_provenance, keys.provenance)
        image = reads.whole(skill_id) if reads.skills[skill_id] is not None else None
        return decode_int(raw_version, keys.version), image

    def cached_snapshot(self, head: Sequence[Any] | None = None) -> tuple[int, SkillbookView]:
        """Like snapshot(), but shared per version through the process's SnapshotCache.

        Its skills carry no provenance: a worker serves and decides on skills, and a
        100,000-skill skillbook costs it no more for their history. Reads only the
        version (and the skillbook's incarnation) when the cache holds that version.
        The snapshot is shared with other callers, so it comes as a read-only
        SkillbookView: to change a copy, use ``Skillbook.from_dict(view.to_dict())``.

        ``head``: the replies of the reads :meth:`queue_head_read` queued, sent by the caller in a
        round trip of its own (a step's start); they are not read again.
        """
        version, _, book = self._cached_book(head)
        return version, SkillbookView(book)

    def queue_head_read(self, pipe: Pipeline) -> None:
        """Queue on ``pipe`` (a transaction) what cached_snapshot reads first: the version and the
        skillbook's incarnation; hand their replies to ``cached_snapshot(head=...)``."""
        pipe.get(self.keys.version)
        pipe.hget(self.keys.meta, META_INCARNATION)

    def cached_snapshot_of_incarnation(self) -> tuple[int, str | None, SkillbookView]:
        """cached_snapshot() and the skillbook's incarnation (new each time the skillbook is created).

        For readers that cache what they derive from the snapshot (the console's
        skill index): (incarnation, version) names its content exactly, where a
        deleted and recreated skillbook may reach the same version again.
        """
        version, incarnation, book = self._cached_book()
        return version, incarnation, SkillbookView(book)

    def snapshot_at(self, version: int) -> tuple[int, SkillbookView]:
        """The skillbook as it was at ``version`` (a label's), read-only, cached per version.

        Built from the head's cached snapshot with every skill touched since
        ``version`` put back as the change log says it was, so it costs the
        changes since, not the skillbook's size; the similarity decisions are
        the head's. Raises VersionRangeError for a version the skillbook does
        not have, ChangelogTrimmedError when the log no longer reaches back.
        """
        head_version, incarnation, head = self._cached_book()
        if version == head_version:
            return version, SkillbookView(head)
        if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version < head_version:
            raise VersionRangeError(
                f"skillbook {self.name!r}: no version {version!r} (it has versions 1 to {head_version})",
                name=self.name,
                current=head_version,
                requested=(version,) if isinstance(version, int) else (),
            )
        # An identity of their own: older versions must not crowd the head's out of the cache.
        identity = (*self._identity(incarnation), "at")
        key = (*identity, version)
        cached = self._cache.get(key)
        if cached is not None:
            return version, SkillbookView(cached)
        images = images_at_start(read_changes(self._redis, self.keys, version, head_version))
        book = head.with_changes(
            [images], next_id=head.next_id_number, order_of_new=lambda skill_id: skill_order_key(skill_id)
        )
        self._cache.put(key, book, identity=identity, version=version)
        return version, SkillbookView(book)

    def _cached_book(self, head: Sequence[Any] | None = None) -> tuple[int, str | None, Skillbook]:
        """The current version, the incarnation and its shared snapshot (see cached_snapshot)."""
        if head is None:
            with self._redis.pipeline(transaction=True) as pipe:
                self.queue_head_read(pipe)
                head = pipe.execute(raise_on_error=False)
        raw_version, raw_incarnation = checked_reads(head, [self.keys.version, self.keys.meta])
        version, incarnation = decode_int(raw_version, self.keys.version), optional_text(raw_incarnation)
        cached = self._cache.get(self._cache_key(incarnation, version))
        if cached is not None:
            return version, incarnation, cached
        with self._cache.filling(self._identity(incarnation)):
            cached = self._cache.get(self._cache_key(incarnation, version))  # built while we waited
            if cached is not None:
                return version, incarnation, cached
            advanced = self._advance_cached(incarnation, version)
            if advanced is not None:
                version, book = advanced
            else:
                version, incarnation, book = self._load_for_cache(incarnation, version)
            self._cache.put(
                self._cache_key(incarnation, version),
                book,
                identity=self._identity(incarnation),
                version=version,
            )
        return version, incarnation, book

    def snapshot_of(self, label: str | None) -> tuple[int, SkillbookView]:
        """What a reader of ``label`` serves (None: the head); UnknownLabelError for a missing label."""
        if label is None:
            return self.cached_snapshot()
        return self.snapshot_at(self.labels.require(label))

    @property
    def labels(self) -> SkillbookLabels:
        """The skillbook's labelled versions (prod, canary, ...)."""
        return SkillbookLabels(self._redis, self.keys, self._cas, kept=self.retention.label_moves)

    @property
    def evaluations(self) -> SkillbookEvaluations:
        """The record of the skillbook's evaluations (every one, newest first)."""
        return SkillbookEvaluations(self._redis, self.keys, kept=self.retention.evaluations)

    def _advance_cached(self, incarnation: str | None, version: int) -> tuple[int, Skillbook] | None:
        """The newest cached snapshot brought forward through the change log, or None to read it all.

        Reads only the log entries since that snapshot (in one MULTI with the
        version, so they end exactly at the version returned), which keeps a
        worker's refresh cheap however big the skillbook grows.
        """
        newest = self._cache.newest(self._identity(incarnation))
        # A newest already past ``version`` (another thread brought it forward meanwhile)
        # is brought to the current version like any other: never a reason to read it all.
        if newest is None or version - newest[0] > _MAX_INCREMENTAL_VERSIONS:
            return None
        base_version, base = newest
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.get(self.keys.version)
            pipe.hmget(self.keys.meta, [META_NEXT_ID, META_INCARNATION])
            pipe.xrange(self.keys.changes, min=stream_id(base_version + 1))
            raw_version, (raw_next_id, raw_incarnation), entries = execute_reads(
                pipe, [self.keys.version, self.keys.meta, self.keys.changes]
            )
        current = decode_int(raw_version, self.keys.version)
        records = records_of(entries, self.keys.changes)
        contiguous = [r.version for r in records] == list(range(base_version + 1, current + 1))
        # Rollbacks and imports may restore skills to earlier places, decisions change what an
        # apply never does: those versions are read whole. An approved update proposal applies
        # as an apply does, and a rejection or policy change touches no skill: brought forward.
        if (
            optional_text(raw_incarnation) != incarnation
            or not contiguous
            or not all(advances_in_place(r) for r in records)
        ):
            return None
        if not records:  # nothing written since: the cached one is current
            return current, base
        new_ids = sorted({i for r in records for i, image in r.after.items() if image is not None})
        orders = self._stored_orders(new_ids)
        book = advance_snapshot(
            base,
            (r.after for r in records),
            next_id=decode_int(raw_next_id, self.keys.meta) or 1,
            new_order=lambda skill_id: (orders.get(skill_id, _LAST), *skill_order_key(skill_id)),
        )
        return current, book

    def _stored_orders(self, skill_ids: list[str]) -> dict[str, int]:
        """Insertion order numbers of skills as stored now (an order never changes once given)."""
        if not skill_ids:
            return {}
        orders = {}
        for skill_id, raw in zip(skill_ids, self._redis.hmget(self.keys.skills, skill_ids), strict=True):
            order = decode_stored_skill(raw, self.keys.skills, skill_id)[1] if raw is not None else None
            if order is not None:
                orders[skill_id] = order
        return orders

    def export(self) -> Skillbook:
        """The current skillbook; UnknownSkillbookError if it was never written."""
        version, book = self.snapshot()
        if version == 0:
            raise UnknownSkillbookError(self.name)
        return book

    def active_skills(self) -> int:
        """How many active skills the skillbook holds (the count its writes keep; O(1))."""
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.get(self.keys.version)
            pipe.hget(self.keys.meta, META_ACTIVE_SKILLS)
            raw_version, raw_active = execute_reads(pipe, [self.keys.version, self.keys.meta])
        if raw_active is not None or not decode_int(raw_version, self.keys.version):
            return decode_int(raw_active, self.keys.meta)
        # Last written before the count was kept: count now; its next write stores the count.
        with reading(self.keys.skills):
            return count_active(self._redis.hgetall(self.keys.skills), self.keys.skills)

    def stats(self) -> dict[str, int]:
        """The store's counters: applies, stale_applies, skipped_ops (of them adds_skipped_full: ADDs
        left out because the skillbook was full), duplicate_deliveries, conflicts."""
        counts = dict.fromkeys(STATS_FIELDS, 0)
        with reading(self.keys.stats):
            raw_counts = self._redis.hgetall(self.keys.stats)
        for key, value in raw_counts.items():
            counts[decode_text(key)] = decode_int(value, self.keys.stats)
        return counts

    def similarity_decisions(self) -> dict[tuple[str, str], SimilarityDecision]:
        """Every recorded similarity decision, keyed by the sorted pair of skill ids."""
        decisions: dict[tuple[str, str], SimilarityDecision] = {}
        with reading(self.keys.decisions):
            raw_decisions = self._redis.hgetall(self.keys.decisions)
        for key, value in raw_decisions.items():
            id_a, _, id_b = decode_text(key).partition(",")
            decisions[(id_a, id_b)] = SimilarityDecision.from_dict(
                decode_json(value, self.keys.decisions, decode_text(key))
            )
        return decisions

    # -- change log ------------------------------------------------------------------------
    def history(self, limit: int = 50, *, before: int | None = None) -> list[ChangeRecord]:
        """The last ``limit`` changes (of the versions below ``before``, if given), newest first."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if before is not None and before <= 1:
            return []  # no version below 1
        newest = "+" if before is None else "(" + stream_id(before)
        entries = stream_newest_first(
            self._redis, self.keys.changes, newest=newest, page=min(STREAM_PAGE, limit)
        )
        return records_of(list(itertools.islice(entries, limit)), self.keys.changes)

    def changes(self, from_version: int, to_version: int) -> list[ChangeRecord]:
        """The change records of versions ``from_version`` + 1 to ``to_version``, oldest first.

        Reads just those entries (history() reads the newest ones, whatever their
        size). Raises ChangelogTrimmedError when the log does not hold them all.
        """
        return read_changes(self._redis, self.keys, from_version, to_version)

    def changes_touching(self, skill_id: str, limit: int = 50) -> list[ChangeRecord]:
        """Of the last ``limit`` changes, those that touched ``skill_id``, newest first.

        Each record holds that skill's before and after images alone (the rest as
        history() gives it). An entry whose images do not name the skill is not
        decoded, and of a big one (an import) only the skill's part is.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        entries = stream_newest_first(self._redis, self.keys.changes, page=min(STREAM_PAGE, limit))
        return records_touching(itertools.islice(entries, limit), self.keys.changes, skill_id)

    def changelog_extent(self) -> tuple[int, str | None, int]:
        """The current version, the incarnation and the oldest version the change log holds, in one MULTI.

        Each version's entry is added in the transaction that makes the version,
        and the log is trimmed from its oldest end: it holds exactly the versions
        from the oldest one to the current one (none: the oldest is current + 1).
        Its length says which without reading an entry (some hold 100,000 images).
        """
        keys = self.keys
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.get(keys.version)
            pipe.hget(keys.meta, META_INCARNATION)
            pipe.xlen(keys.changes)
            raw_version, raw_incarnation, length = execute_reads(
                pipe, [keys.version, keys.meta, keys.changes]
            )
        version = decode_int(raw_version, keys.version)
        return version, optional_text(raw_incarnation), version - decode_int(length, keys.changes) + 1

    def change_digests(self, from_version: int, to_version: int) -> list[ChangeDigest]:
        """The digests of the entries the change log holds of versions ``from_version`` + 1 to ``to_version``.

        Oldest first; a version trimmed from the log is simply missing. An entry that
        touched many skills (an import) comes as the digest its writer stored; the others
        are decoded, digested and let go one at a time (see digest_reads.py).
        """
        return read_change_digests(self._redis, self.keys, from_version, to_version)

    def diff(self, from_version: int, to_version: int) -> dict[str, tuple[SkillImage, SkillImage]]:
        """Skill id -> (state at ``from_version``, state at ``to_version``) for every skill changed between.

        A state is the skill's file-format dict, None where the skill did not
        exist. Raises VersionRangeError for versions out of range, or
        ChangelogTrimmedError when the change log no longer reaches back to
        ``from_version`` (both ValueErrors).
        """
        current = self.version()
        if not 0 <= from_version <= to_version <= current:
            raise VersionRangeError(
                f"skillbook {self.name!r}: need 0 <= from_version <= to_version <= {current} "
                f"(the current version), got {from_version} and {to_version}",
                name=self.name,
                current=current,
                requested=(from_version, to_version),
            )
        if from_version == to_version:
            return {}
        return aggregate_diff(read_changes(self._redis, self.keys, from_version, to_version))

    def rollback(
        self, to_version: int, *, source: dict[str, Any] | None = None, expect: int | None = None
    ) -> int:
        """Restore every skill to its state at ``to_version`` as one new version; return that version.

        History is never rewritten: the rollback is recorded in the change log
        (source ``{"rollback_to": to_version}``). The id counter is not wound
        back, so no id is ever issued twice; similarity decisions are kept.
        Raises VersionRangeError if ``to_version`` is beyond the current version,
        ChangelogTrimmedError if the change log no longer reaches back to it (both
        ValueErrors), UnknownSkillbookError for a new skillbook. With ``expect`` (the
        head version the caller saw), HeadMovedError if the head is elsewhere: a
        rollback confirmed against one head never undoes versions nobody saw.
        """
        if isinstance(to_version, bool) or not isinstance(to_version, int) or to_version < 0:
            raise ValueError(f"to_version must be a non-negative int, got {to_version!r}")
        source_json = dump_json({**(source or {}), "rollback_to": to_version}, "source")
        new_version = self._cas(
            "rollback", lambda pipe: self._writes.rollback(pipe, to_version, source_json, expect)
        )
        logger.info(
            "skillbook %r rolled back to version %d as version %d", self.name, to_version, new_version
        )
        return new_version

    # -- writes ------------------------------------------------------------------------------
    def apply(
        self,
        batch: UpdateBatch,
        *,
        base_version: int | None = None,
        idempotency_key: str | None = None,
        source: dict[str, Any] | None = None,
    ) -> StoreApplyResult:
        """Apply every operation of ``batch`` as one new version, or none of them.

        The batch is validated before Redis is touched (InvalidUpdateError).
        Semantics are Skillbook.apply_update's: unknown ids skipped and
        counted, an ADD restating an active skill of its section skipped,
        ids allocated inside the transaction. ADDs that would take the skillbook
        above ``max_skills`` active skills are left out (``report.full``,
        counted in stats and logged once) and the rest of the batch applies. ``base_version`` is the version
        the batch was computed on (stale when older than the current one);
        an ``idempotency_key`` already applied returns the recorded result
        without changing anything. An empty batch changes nothing and makes
        no version. Raises VersionConflict after ``max_attempts`` lost races.
        """
        result = self._apply(batch, base_version, idempotency_key, source, unless_reviewed=False)
        assert result is not None  # only an apply told to mind the review policy leaves a batch alone
        return result

    def apply_unless_reviewed(
        self,
        batch: UpdateBatch,
        *,
        base_version: int | None = None,
        idempotency_key: str | None = None,
        source: dict[str, Any] | None = None,
    ) -> StoreApplyResult | None:
        """:meth:`apply`, unless the review policy makes an operation of ``batch`` a proposal: then None,
        and nothing is written (split the batch: see ``StoreBackedSkillbook.apply_update``).

        The policy is read with the version under the apply's own WATCH, so a learning write under
        the auto policy costs no round trip for it, and a policy set meanwhile makes the attempt
        run again.
        """
        return self._apply(batch, base_version, idempotency_key, source, unless_reviewed=True)

    def _apply(
        self,
        batch: UpdateBatch,
        base_version: int | None,
        idempotency_key: str | None,
        source: dict[str, Any] | None,
        *,
        unless_reviewed: bool,
    ) -> StoreApplyResult | None:
        batch.validate_operations()
        if idempotency_key is not None and (not isinstance(idempotency_key, str) or not idempotency_key):
            raise ValueError(f"idempotency_key must be a non-empty string, got {idempotency_key!r}")
        source_json = dump_json(source, "source")
        if not batch.operations:
            version = self.version()
            return StoreApplyResult(version, ApplyReport(), False, is_stale(base_version, version))
        batch_json = batch.to_json()
        result = self._cas(
            "apply",
            lambda pipe: self._writes.apply(
                pipe,
                batch,
                base_version,
                idempotency_key,
                batch_json,
                source_json,
                unless_reviewed=unless_reviewed,
            ),
        )
        if result is None:
            return None
        if not result.duplicate_delivery:
            log_report(self.name, result.version, batch, result.report)
        if self._observer is not None:
            self._observer.on_apply(self.name, result)
        return result

    def apply_consolidation(
        self,
        batch: ConsolidationBatch,
        *,
        idempotency_key: str | None = None,
        source: dict[str, Any] | None = None,
    ) -> StoreConsolidationResult:
        """Apply a deduplication batch (merge, delete, keep, update) as one new version, or none of it.

        An operation naming an unknown or already-deleted skill raises
        InvalidConsolidationError (its index and the id) before anything is
        written. KEEP decisions are stored with the skillbook. An
        ``idempotency_key`` already applied returns the recorded result.
        """
        if idempotency_key is not None and (not isinstance(idempotency_key, str) or not idempotency_key):
            raise ValueError(f"idempotency_key must be a non-empty string, got {idempotency_key!r}")
        source_json = dump_json(source, "source")
        if not batch.operations:
            return StoreConsolidationResult(self.version(), ConsolidationReport(), False)
        batch_json = batch.to_json()
        result = self._cas(
            "consolidate",
            lambda pipe: self._writes.consolidate(pipe, batch, idempotency_key, batch_json, source_json),
        )
        if not result.duplicate_delivery:
            logger.info(
                "skillbook %r version %d: consolidated: %s",
                self.name,
                result.version,
                result.report.summary(),
            )
        return result

    def import_skillbook(
        self, skillbook: Skillbook, *, replace: bool = False, source: dict[str, Any] | None = None
    ) -> int:
        """Load ``skillbook`` (e.g. from a file) as one new version; return it.

        An existing skillbook is replaced only with ``replace=True`` (else
        SkillbookExistsError); its similarity decisions are replaced too. The
        id counter never goes back, so ids are never issued twice. SkillbookFormatError
        names a skill over core/skill_limits.py's limits; nothing is written then.
        """
        skillbook.check_limits(f"the skillbook imported into {self.name!r}")
        data = skillbook.to_dict()
        # A JSON round trip, so that images compare equal to what Redis returns.
        wholes: dict[str, dict[str, Any]] = json.loads(json.dumps(data["skills"]))
        skills: dict[str, dict[str, Any]] = {}
        provenance: dict[str, dict[str, Any]] = {}
        for skill_id, whole in wholes.items():
            skills[skill_id], kept = split_provenance(whole)
            if kept is not None:  # a file may hold more occurrences than this store keeps
                kept["occurrences"] = bounded_occurrences(kept["occurrences"], self.provenance_keep)
                provenance[skill_id] = kept
        decisions = {key: json.dumps(value) for key, value in data["similarity_decisions"].items()}
        index: dict[str, list[str]] = {}
        for skill_id, image in skills.items():
            field = skill_field(image)
            if field is not None:
                index.setdefault(field, []).append(skill_id)
        for ids in index.values():
            ids.sort(key=skill_order_key)
        payload = ImportPayload(skills, decisions, index, int(data["next_id"]) + 1, provenance)
        source_json = dump_json({**(source or {}), "import": True}, "source")
        new_version = self._cas(
            "import", lambda pipe: self._writes.import_skillbook(pipe, payload, replace, source_json)
        )
        logger.info("imported %d skills into skillbook %r as version %d", len(skills), self.name, new_version)
        return new_version

    def set_similarity_decision(self, id_a: str, id_b: str, decision: SimilarityDecision) -> int:
        """Record a decision about a pair of skills (as a new version); return that version."""
        field = decision_field(id_a, id_b)
        value = json.dumps(decision.to_dict())
        source_json = dump_json({"similarity_decision": {"pair": field, **decision.to_dict()}}, "source")
        return self._cas(
            "set_similarity_decision", lambda pipe: self._writes.set_decision(pipe, field, value, source_json)
        )

    # -- lifecycle: pin, archive, prune (lifecycle_writes.py) -----------------------------------
    def pin(self, skill_ids: Iterable[str], *, actor: str | None = None, note: str = "") -> LifecycleResult:
        """Pin skills: never removed, merged or archived until unpinned. One version (none if all were)."""
        return self._lifecycle.change(LifecycleAction.PIN, skill_ids, actor=actor, note=note)

    def unpin(self, skill_ids: Iterable[str], *, actor: str | None = None, note: str = "") -> LifecycleResult:
        """Unpin skills, as one version (none if none was pinned)."""
        return self._lifecycle.change(LifecycleAction.UNPIN, skill_ids, actor=actor, note=note)

    def archive(
        self, skill_ids: Iterable[str], *, actor: str | None = None, note: str = ""
    ) -> LifecycleResult:
        """Archive skills: out of the prompt and the count, kept. PinnedSkillError names a pinned one."""
        return self._lifecycle.change(LifecycleAction.ARCHIVE, skill_ids, actor=actor, note=note)

    def restore(
        self, skill_ids: Iterable[str], *, actor: str | None = None, note: str = ""
    ) -> LifecycleResult:
        """Bring archived skills back into the prompt, as one version."""
        return self._lifecycle.change(LifecycleAction.RESTORE, skill_ids, actor=actor, note=note)

    def archived(self) -> list[Skill]:
        """The archived skills, in skillbook order."""
        return self._lifecycle.archived()

    def plan_prune(self, rule: StaleRule) -> PrunePlan:
        """The skills stale by ``rule``, each with why; nothing changes."""
        return self._lifecycle.plan_prune(rule)

    def prune(
        self, rule: StaleRule, *, actor: str | None = None, note: str = ""
    ) -> tuple[PrunePlan, LifecycleResult]:
        """Archive the skills stale by ``rule`` in one version (actor ``prune`` unless named)."""
        return self._lifecycle.prune(rule, actor=actor, note=note)

    def delete(self) -> bool:
        """Delete the skillbook, its change log and counters; False if it did not exist."""
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.exists(self.keys.version)
            pipe.delete(*self.keys.fixed())
            existed, _ = pipe.execute()
        # Idempotency and proposal-signature keys are many; delete them outside the transaction.
        batch: list[Any] = []
        for pattern in (self.keys.idempotency_pattern, self.keys.proposal_signature_pattern):
            for key in self._redis.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) == 1000:
                    self._redis.delete(*batch)
                    batch.clear()
        if batch:
            self._redis.delete(*batch)
        self._redis.srem(registry_key(self.keys.prefix), self.name)
        logger.info("deleted skillbook %r", self.name)
        return bool(existed)

    # -- transactions --------------------------------------------------------------------------
    def _cas(self, operation: str, attempt: Callable[[Pipeline], T]) -> T:
        for number in range(1, self.max_attempts + 1):
            try:
                with self._redis.pipeline(transaction=True) as pipe:
                    return attempt(pipe)
            except redis.WatchError:
                # Another writer committed between our read and our EXEC: nothing of ours was applied.
                self._redis.hincrby(self.keys.stats, STAT_CONFLICTS, 1)
                if self._observer is not None:
                    self._observer.on_conflict(self.name, operation)
                if number < self.max_attempts:
                    delay = random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2 ** (number - 1)))
                    logger.debug(
                        "skillbook %r: %s attempt %d lost a race; retrying in %.1f ms",
                        self.name,
                        operation,
                        number,
                        delay * 1000,
                    )
                    time.sleep(delay)
        logger.warning(
            "skillbook %r: %s gave up after %d conflicting attempts", self.name, operation, self.max_attempts
        )
        raise VersionConflict(self.name, self.max_attempts, operation)

    def _load_for_cache(self, incarnation: str | None, version: int) -> tuple[int, str | None, Skillbook]:
        """A snapshot for a cache that has none to bring forward: the persisted compact one if it
        reaches, else a whole read (then persisted for the next fresh reader)."""
        loaded = self._compact.load(incarnation, version)
        if loaded is not None:
            loaded_version, book = loaded
            identity = self._identity(incarnation)
            self._cache.put(
                self._cache_key(incarnation, loaded_version), book, identity=identity, version=loaded_version
            )
            advanced = self._advance_cached(incarnation, version)
            if advanced is not None:
                current, book = advanced
                if current - loaded_version > _COMPACT_REFRESH_VERSIONS:
                    book = self._compact.save(book, current, incarnation)
                return current, incarnation, book
        version, incarnation, book = self._read_whole_for_cache()
        return version, incarnation, self._compact.save(book, version, incarnation)

    def _read_whole_for_cache(self) -> tuple[int, str | None, Skillbook]:
        """A whole read for cached_snapshot (a seam to count them: the incremental path avoids them)."""
        return self._read_snapshot(with_provenance=False)

    def _read_snapshot(self, *, with_provenance: bool) -> tuple[int, str | None, Skillbook]:
        keys = self.keys
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.get(keys.version)
            pipe.hmget(keys.meta, [META_NEXT_ID, META_INCARNATION])
            pipe.hgetall(keys.skills)
            pipe.hgetall(keys.decisions)
            read_keys = [keys.version, keys.meta, keys.skills, keys.decisions]
            if with_provenance:
                pipe.hgetall(keys.provenance)
                read_keys.append(keys.provenance)
            raw_version, (raw_next_id, raw_incarnation), raw_skills, raw_decisions, *raw_provenance = (
                execute_reads(pipe, read_keys)
            )
        reads = SkillReads(keys.skills)
        for key, value in raw_skills.items():
            reads.add_skill(decode_text(key), value)
        for key, value in (raw_provenance[0] if raw_provenance else {}).items():
            reads.add_provenance(decode_text(key), value, keys.provenance)
        present = [skill_id for skill_id, image in reads.skills.items() if image is not None]
        data = {
            # In insertion order, as the core keeps them: skills() and prompts list them alike.
            "skills": {skill_id: reads.whole(skill_id) for skill_id in sorted(present, key=reads.sort_key)},
            "next_id": (decode_int(raw_next_id, keys.meta) or 1) - 1,
            "similarity_decisions": {
                decode_text(k): decode_json(v, keys.decisions, decode_text(k))
                for k, v in raw_decisions.items()
            },
        }
        book = Skillbook.from_dict(data, source=f"redis skillbook {self.name!r}")
        return decode_int(raw_version, keys.version), optional_text(raw_incarnation), book

    def _identity(self, incarnation: str | None) -> tuple[str, str, str | None]:
        """Which skillbook a cached snapshot is of: every version of one incarnation shares it."""
        return (self.keys.prefix, self.name, incarnation)

    def _cache_key(self, incarnation: str | None, version: int) -> tuple[str, str, str | None, int]:
        """A cached snapshot's key: the skillbook's identity and the version."""
        return (*self._identity(incarnation), version)
