"""Every Redis key (and hash field) name the skillbook store uses, in one place.

Layout for a skillbook ``NAME`` under the default prefix ``ace``::

    ace:{sb:NAME}:version      string  the version: 0 (absent) for a new skillbook, +1 per write
    ace:{sb:NAME}:skills       hash    skill id -> skill JSON (the file format's object + "_order")
    ace:{sb:NAME}:provenance   hash    skill id -> {"occurrences": [...], "occurrence_totals": {...}}
    ace:{sb:NAME}:meta         hash    next_id, next_order (next numbers to issue), created_at, incarnation
    ace:{sb:NAME}:content      hash    "section<US>normalised content" -> JSON list of active skill ids
    ace:{sb:NAME}:decisions    hash    "id_a,id_b" (sorted) -> similarity decision JSON
    ace:{sb:NAME}:changes      stream  one entry per version, entry id "<version>-0", capped (MAXLEN ~)
    ace:{sb:NAME}:changes:digests hash version -> digest JSON of an entry touching many skills (an
                                       import), written with the entry: readers of the timeline skip
                                       decoding its images; fields of versions trimmed from the log
                                       are dropped by readers
    ace:{sb:NAME}:adds:inflight stream the ADDs concurrent SkillManager decisions are about to make
                                       (section, content), each kept 30 s; transient, never backed up
    ace:{sb:NAME}:stats        hash    applies, stale_applies, skipped_ops, duplicate_deliveries, conflicts
    ace:{sb:NAME}:idem:KEY     string  result of the apply that carried idempotency key KEY, with a TTL
    ace:{sb:NAME}:embeddings   hash    embedding cache: content hash -> float32 vector bytes
    ace:{sb:NAME}:compact      hash    version, incarnation, data: the newest persisted compact snapshot
                                       (core/compact_snapshot.py); derived, never backed up
    ace:{sb:NAME}:inbox        stream  traces waiting for the nightly run, one JSON "trace" field each
    ace:{sb:NAME}:nightly      hash    the nightly job's cursor, last night, and its current run's fields
    ace:{sb:NAME}:nightly:lock string  held by the one nightly run of this skillbook in progress
    ace:{sb:NAME}:nightly:reports list  the newest nightly run reports (JSON), newest first
    ace:{sb:NAME}:labels       hash    label name (prod, canary, ...) -> the version it points at
    ace:{sb:NAME}:labels:log   stream  every label move: label, from and to version, actor, note, evaluation
    ace:{sb:NAME}:labels:outcomes hash "LABEL:served" / "LABEL:success" / "LABEL:failure" counters (live A/B)
    ace:{sb:NAME}:proposals    hash    proposal id -> proposal JSON (operations, evidence, status, decision)
    ace:{sb:NAME}:proposals:pending zset pending proposal ids, scored by when they were proposed
    ace:{sb:NAME}:review       string  the review policy JSON (absent: "auto", every update applies at once)
    ace:{sb:NAME}:evaluations  list    the newest evaluation reports (JSON), newest first
    ace:skillbooks             set     names of the skillbooks under this prefix

A batch ``ID`` (the ledger of what was sent and what finished)::

    ace:{batch:ID}             hash    counters (enqueued, done, failed, finished:eN), sizes, tenant,
                                       quiet_until (admission's mark: finishes up to it go untold), ...
    ace:{batch:ID}:items       list    epoch 1's payloads in sample order, appended as they are sent
    ace:{batch:ID}:progress    zset    sample key -> when it last made progress; only unfinished samples
    ace:{batch:ID}:started     hash    sample keys whose first step started (or that finished)
    ace:{batch:ID}:reopened    hash    sample keys failed, and running again as their dead letter was retried
    ace:{batch:ID}:outcomes    hash    sample key -> done or failed (the count-once marker)
    ace:{batch:ID}:records     hash    sample key -> its result payload or error record
    ace:{batch:ID}:redrives    hash    sample key -> how often the reconciler sent it again
    ace:{batch:ID}:steps       hash    per step N: "N:name", "N:done", "N:failed", "N:seconds" (total run
                                       time of its done runs), "N:prompt_tokens", "N:completion_tokens",
                                       "N:cost" (USD, only where the provider priced a call)
    ace:{batch:ID}:stepped     hash    sample key -> how many of its steps finished (the count-once marker)
    ace:{batch:ID}:traces      hash    sample key -> the W3C trace context it was sent with (tracing on)
    ace:{batch:ID}:waiting     hash    sample key -> JSON mark of a sample waiting for its tenant's budget
                                       (tenant, step); removed when one of its steps starts or it finishes
    ace:{batch:ID}:starting:eN string  lock: held while one sender sends epoch N's samples (expires)
    ace:{batch:ID}:reconciling string  lock: held by the one reconciler of this batch (expires)
    ace:batches:running        set     ids of batches not yet finished (the reconciler's work list)
    ace:batches:recent         zset    batch id -> when it was created; the newest RECENT_BATCHES only,
                                       ids whose keys expired are dropped when read

A batch's keys have no TTL while it runs and get ACE_RESULT_TTL_SECONDS once it finished.

    ace:schema                 hash    version (the data's schema), written_by (the ace-workers version
                                       that stamped or migrated it), stamped_at, migrated_at; absent on
                                       data written before schemas were kept (schema 0, "unversioned")
    ace:schema:migrating       string  lock: held by the one `ace-workers migrate` run (expires)
    ace:write_partitions       string  the ACE_WRITE_PARTITIONS the workers run with
    ace:fleet:workers          hash    node name -> JSON of the settings that shape its recipes, refreshed
    ace:fleet:shape:DIGEST     string  a recipe shape's steps and settings, as its sender had them (TTL)
    ace:write-probe:ID         string  a worker's look whether Redis takes writes; expires in 1 s
    ace:claim:SHA256           string  a claim-checked payload value too big for a message, with a TTL
    ace:console:audit          stream  one entry per console action, kept ACE_RETENTION_AUDIT_DAYS
    ace:erasures               list    one JSON record per `forget` run (who, when, selector, counts per
                                       place; never the erased content), newest first, kept
                                       ACE_RETENTION_ERASURE_DAYS
    ace:{tenants}              hash    tenant name -> tenant JSON (skillbooks, prefixes, weight, budgets)
    ace:{tenants}:version      string  +1 on every change of the tenants (readers' caches check it)
    ace:{limits}:spend:T:W:P:M hash    tenant T's spend on model M (or "*", all models) in window W (day,
                                       month) period P (20261126, 202611): tokens, cost, requests; expires
                                       when the window ends
    ace:{limits}:models:T      set     the models tenant T spent on this month (what `usage` reads)
    ace:{limits}:reserved      hash    "T<US>M<US>tokens" / "...cost" -> reserved by calls in flight
    ace:{limits}:reservations  hash    reservation id -> "T<US>M<US>tokens<US>cost" of a call in flight
    ace:{limits}:expiry        zset    reservation id -> when it expires (a crashed worker's is freed)
    ace:{limits}:rate:M        hash    model M's shared pacing: request and token schedules, 429 state
    ace:{limits}:throttled     hash    model -> until when a 429 slowed it (every process's cheap check)
    ace:{apikeys}              hash    SHA-256 of an API key's secret -> the key's JSON (id, tenant, role)
    ace:{apikeys}:ids          hash    key id -> the SHA-256 its record is stored under (revoke, list)
    ace:intake:K:SHA256        string  the batch id an intake POST made, per API key id K and SHA-256 of
                                       its Idempotency-Key header: a retried POST answers that batch (TTL)
    ace:{deferred:T}           hash    "BATCH|eN:I|STEP" -> JSON of a step message tenant T's spent budget
                                       deferred (its kwargs and payload, the limit, when it resets)
    ace:{deferred:T}:order     zset    the same fields -> when they were parked (released oldest first)
    ace:{deferred:T}:blocked   hash    "MODEL|LIMIT" -> JSON of the last refusal (spent, budget, resets_at)
    ace:deferred:tenants       set     tenants that ever deferred a sample (the releaser's work list)
    ace:{admission}:PART       hash/zset the fleet's admission state: per batch its tenant, samples
                               admitted, finished, parked, limit and cap; the batches with samples to
                               admit (one slot: the scheduler's script reads and grants in one step);
                               the batches whose finishes may go untold (their quiet_until)

Every per-skillbook key carries the hash tag ``{sb:NAME}``, so in Redis Cluster
they all live in one hash slot and one MULTI/EXEC can span them; every key of a
batch carries ``{batch:ID}``, so its finish script runs in one slot too. The keys
that span skillbooks (``ace:skillbooks``, ``ace:dead_letters``, ``ace:batches:running``,
``ace:batches:recent``, ``ace:write_partitions``, ``ace:console:audit``, ``ace:erasures``, the
claim-check keys and
``ace:schema`` with its lock)
each live in the slot of their own name (the tenants' two keys share the ``{tenants}`` tag, and
the API keys' two the ``{apikeys}`` tag, so one transaction writes both of a pair; a tenant's
deferred samples share the ``{deferred:T}`` tag, so one script parks or claims one; the
admission state shares ``{admission}``, so one script grants; the LLM limiter's keys, which its
one script touches together, the ``{limits}`` tag): no
transaction or script touches one of them together with another key (a batch's creation writes
its record, the running set and the recent index in one pipeline, not one transaction), so they
work on a cluster as they are (ACE_STORE_URL=redis+cluster://...).

Idempotency keys get one string key each, written with ``SET ... EX`` in the
apply transaction: Redis expires them by itself (default after 7 days), so the
record of applied keys stays bounded without a trimming job, and a WATCH on the
key is exact. The retention must outlast the longest redelivery delay (the
broker's visibility timeout plus task retries); a key delivered again after it
expired is applied again.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ...core.skill import normalise_content
from .errors import InvalidKeyPrefixError, InvalidSkillbookNameError

__all__ = [
    "DEFAULT_PREFIX",
    "META_CREATED_AT",
    "META_INCARNATION",
    "META_NEXT_ID",
    "META_NEXT_ORDER",
    "STATS_FIELDS",
    "STAT_APPLIES",
    "STAT_CONFLICTS",
    "STAT_DUPLICATE_DELIVERIES",
    "STAT_SKIPPED_OPS",
    "STAT_ADDS_SKIPPED_FULL",
    "STAT_STALE_APPLIES",
    "SkillbookKeys",
    "batch_key",
    "content_field",
    "dead_letters_key",
    "fleet_workers_key",
    "console_audit_key",
    "erasures_key",
    "recipe_shape_key",
    "INBOX_TRACE_FIELD",
    "NIGHTLY_CURSOR",
    "NIGHTLY_LAST_NIGHT",
    "NIGHTLY_RUN_FIELDS",
    "NIGHTLY_STALLS",
    "write_probe_key",
    "api_keys_key",
    "api_key_ids_key",
    "intake_idempotency_key",
    "claim_key",
    "claim_digest",
    "decision_field",
    "deferred_key",
    "deferring_tenants_key",
    "registry_key",
    "recent_batches_key",
    "running_batches_key",
    "schema_key",
    "schema_lock_key",
    "lasting_state_keys",
    "validate_key_prefix",
    "validate_skillbook_name",
]

DEFAULT_PREFIX = "ace"
# The tenant of every skillbook no tenant owns (see tenancy/tenants.py); a batch records its tenant.
DEFAULT_TENANT = "default"

# Names are used verbatim inside key names: no braces (hash tags), colons,
# spaces or glob characters can get in.
_SKILLBOOK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_KEY_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
# The digest of a claim key, as hashlib's hexdigest() writes it.
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")

# Fields of the meta hash.
META_NEXT_ID = "next_id"  # the number the next allocated skill id gets
META_NEXT_ORDER = "next_order"  # the insertion sequence number the next added skill gets
META_CREATED_AT = "created_at"
META_INCARNATION = "incarnation"

# Fields of the stats hash; stats() reports each, 0 when never counted.
STAT_APPLIES = "applies"
STAT_STALE_APPLIES = "stale_applies"
STAT_SKIPPED_OPS = "skipped_ops"
STAT_ADDS_SKIPPED_FULL = "adds_skipped_full"
STAT_DUPLICATE_DELIVERIES = "duplicate_deliveries"
STAT_CONFLICTS = "conflicts"
STATS_FIELDS = (
    STAT_APPLIES,
    STAT_STALE_APPLIES,
    STAT_SKIPPED_OPS,
    STAT_ADDS_SKIPPED_FULL,
    STAT_DUPLICATE_DELIVERIES,
    STAT_CONFLICTS,
)

# Unit separator. Python's str.split() treats it as whitespace, so a
# normalised content never holds one: the last separator in a field ends the section.
_FIELD_SEPARATOR = "\x1f"

# The one field of an inbox stream entry: the trace's JSON.
INBOX_TRACE_FIELD = "trace"

# Fields of the nightly hash. The cursor (the last inbox entry learned) and the last night
# run stay; a run's own fields are written when it is planned (``stalls`` counted while it
# waits) and deleted, with the cursor moved, in the transaction that finishes it.
NIGHTLY_CURSOR = "cursor"
NIGHTLY_LAST_NIGHT = "last_night"
NIGHTLY_STALLS = "stalls"
NIGHTLY_RUN_FIELDS = (
    "run_id",
    "started_at",
    "range_end",
    "traces",
    "batch_id",
    "skills_before",
    NIGHTLY_STALLS,
)


def validate_skillbook_name(name: object) -> str:
    """Return ``name`` if it can name a skillbook, else raise InvalidSkillbookNameError (a ValueError).

    A name is 1 to 128 characters of ``A-Z a-z 0-9 _ . -``, starting with a
    letter or digit, so it can never break out of its key's hash tag.
    """
    if not isinstance(name, str) or _SKILLBOOK_NAME.fullmatch(name) is None:
        raise InvalidSkillbookNameError(name)
    return name


def validate_key_prefix(prefix: object) -> str:
    """Return ``prefix`` if it can start key names, else raise InvalidKeyPrefixError (a ValueError)."""
    if not isinstance(prefix, str) or _KEY_PREFIX.fullmatch(prefix) is None:
        raise InvalidKeyPrefixError(prefix)
    return prefix


def registry_key(prefix: str = DEFAULT_PREFIX) -> str:
    """The set of skillbook names under ``prefix``: the one key outside every skillbook's hash slot."""
    return f"{validate_key_prefix(prefix)}:skillbooks"


def dead_letters_key(prefix: str = DEFAULT_PREFIX) -> str:
    """The list of step messages that failed after their retries, kept for inspection and retry."""
    return f"{validate_key_prefix(prefix)}:dead_letters"


def fleet_workers_key(prefix: str = DEFAULT_PREFIX) -> str:
    """The hash of what shapes a recipe on each running worker, by node name (see worker/fleet.py)."""
    return f"{validate_key_prefix(prefix)}:fleet:workers"


def recipe_shape_key(prefix: str, digest: str) -> str:
    """The steps and shaping settings a chain of recipe shape ``digest`` was sent with (worker/fleet.py)."""
    return f"{validate_key_prefix(prefix)}:fleet:shape:{digest}"


def write_partitions_key(prefix: str = DEFAULT_PREFIX) -> str:
    """The ACE_WRITE_PARTITIONS the fleet runs with, recorded by its workers (see worker/partitions.py)."""
    return f"{validate_key_prefix(prefix)}:write_partitions"


def schema_key(prefix: str = DEFAULT_PREFIX) -> str:
    """Hash: the schema version of the data under ``prefix`` and the ace-workers version that wrote it.

    Its own slot: it is written alone (a stamp, a finished migration), never in a transaction
    with another key, so a cluster takes it as it is.
    """
    return f"{validate_key_prefix(prefix)}:schema"


def schema_lock_key(prefix: str = DEFAULT_PREFIX) -> str:
    """String: the lock of the one ``ace-workers migrate`` run in progress (expires if its holder dies)."""
    return f"{schema_key(prefix)}:migrating"


def lasting_state_keys(prefix: str = DEFAULT_PREFIX) -> tuple[str, ...]:
    """The keys one of which exists wherever data of ``prefix`` lasts: where "no data yet" is read.

    Every skillbook is listed in the registry before its first write, every batch in the recent
    index; tenants, API keys, dead letters, deferrals, the console's audit and a fleet's
    records each have their one key. What is left (claims, probes, limiter windows) expires.
    """
    return (
        registry_key(prefix),
        recent_batches_key(prefix),
        running_batches_key(prefix),
        dead_letters_key(prefix),
        tenants_key(prefix),
        api_keys_key(prefix),
        deferring_tenants_key(prefix),
        console_audit_key(prefix),
        erasures_key(prefix),
        fleet_workers_key(prefix),
        write_partitions_key(prefix),
    )


def running_batches_key(prefix: str = DEFAULT_PREFIX) -> str:
    """The set of unfinished batch ids; like the registry, a global key written outside any transaction."""
    return f"{validate_key_prefix(prefix)}:batches:running"


def recent_batches_key(prefix: str = DEFAULT_PREFIX) -> str:
    """The sorted set of batch ids by creation time, capped: the index of recent batches (finished too)."""
    return f"{validate_key_prefix(prefix)}:batches:recent"


def console_audit_key(prefix: str = DEFAULT_PREFIX) -> str:
    """Stream: one entry per action taken in the web console (who, what, on what, outcome)."""
    return f"{validate_key_prefix(prefix)}:console:audit"


def erasures_key(prefix: str = DEFAULT_PREFIX) -> str:
    """List: one JSON record per erasure (``forget``), newest first; the erased content is never in it."""
    return f"{validate_key_prefix(prefix)}:erasures"


def tenants_key(prefix: str = DEFAULT_PREFIX) -> str:
    """Hash: tenant name -> the tenant's JSON (what it owns, its weight, cap and budgets)."""
    return f"{validate_key_prefix(prefix)}:{{tenants}}"


def tenants_version_key(prefix: str = DEFAULT_PREFIX) -> str:
    """String: a counter bumped with every change of the tenants hash, so caches know when to reload."""
    return f"{validate_key_prefix(prefix)}:{{tenants}}:version"


@dataclass(frozen=True)
class LimiterKeys:
    """The keys of the fleet-wide LLM limiter (tenancy/limiter.py), all under the ``{limits}`` hash tag."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        validate_key_prefix(self.prefix)

    @property
    def base(self) -> str:
        """What every limiter key starts with."""
        return f"{self.prefix}:{{limits}}"

    def spend(self, tenant: str, window: str, period: str, model: str) -> str:
        """Hash: tokens, cost, requests of ``tenant`` on ``model`` ("*": all) in one day or month."""
        return f"{self.base}:spend:{tenant}:{window}:{period}:{model}"

    def models(self, tenant: str) -> str:
        """Set: the models ``tenant`` spent on lately (its usage report reads their windows)."""
        return f"{self.base}:models:{tenant}"

    @property
    def reserved(self) -> str:
        """Hash: tokens and cost reserved by calls in flight, per tenant and model."""
        return f"{self.base}:reserved"

    @property
    def reservations(self) -> str:
        """Hash: reservation id -> what it reserved."""
        return f"{self.base}:reservations"

    @property
    def expiry(self) -> str:
        """Sorted set: reservation id -> when it expires."""
        return f"{self.base}:expiry"

    def rate(self, model: str) -> str:
        """Hash: ``model``'s shared request and token schedules and its 429 slowdown."""
        return f"{self.base}:rate:{model}"

    @property
    def throttled(self) -> str:
        """Hash: model -> until when a provider 429 slowed it."""
        return f"{self.base}:throttled"


def api_keys_key(prefix: str = DEFAULT_PREFIX) -> str:
    """Hash: SHA-256 (hex) of an API key's secret -> the key's JSON record; the secret is never stored."""
    return f"{validate_key_prefix(prefix)}:{{apikeys}}"


def api_key_ids_key(prefix: str = DEFAULT_PREFIX) -> str:
    """Hash: API key id -> the SHA-256 its record is stored under, so a key is revoked by its id."""
    return f"{validate_key_prefix(prefix)}:{{apikeys}}:ids"


def intake_idempotency_key(prefix: str, key_id: str, idempotency_key: str) -> str:
    """String with a TTL: the batch an intake POST of API key ``key_id`` with header ``idempotency_key`` made.

    The header is the client's text: it is hashed, so any value makes one short key of ours.
    """
    digest = hashlib.sha256(idempotency_key.encode()).hexdigest()
    return f"{validate_key_prefix(prefix)}:intake:{key_id}:{digest}"


def deferred_key(prefix: str, tenant: str, part: str = "") -> str:
    """A key of tenant ``tenant``'s deferred samples; all of them share the ``{deferred:T}`` hash tag."""
    return f"{validate_key_prefix(prefix)}:{{deferred:{tenant}}}{':' + part if part else ''}"


def deferring_tenants_key(prefix: str = DEFAULT_PREFIX) -> str:
    """Set: the tenants that ever deferred a sample for their budget (where a releaser looks)."""
    return f"{validate_key_prefix(prefix)}:deferred:tenants"


def admission_key(part: str, prefix: str = DEFAULT_PREFIX) -> str:
    """A key of the fleet's admission state (tenancy/admission_scheduler.py), all under ``{admission}``."""
    return f"{validate_key_prefix(prefix)}:{{admission}}:{part}"


def write_probe_key(token: str, prefix: str = DEFAULT_PREFIX) -> str:
    """String: a throwaway write that shows whether Redis takes writes (``token`` makes it unique)."""
    return f"{prefix}:write-probe:{token}"


def claim_key(prefix: str, digest: str) -> str:
    """String with a TTL: a claim-checked value; ``digest`` is the SHA-256 of its JSON."""
    return f"{prefix}:claim:{digest}"


def claim_digest(prefix: str, key: str) -> str | None:
    """The SHA-256 (64 lowercase hex digits) in ``key`` if it is exactly a claim key under ``prefix``.

    None for any other key. A payload names its claims by key, and a payload may be crafted: only a key of
    this form may be read for it, so no other key of the store can be.
    """
    head = f"{prefix}:claim:"
    digest = key[len(head) :] if key.startswith(head) else ""
    return digest if _SHA256_HEX.fullmatch(digest) else None


def batch_key(prefix: str, batch_id: str, part: str = "") -> str:
    """A key of one batch; every key of a batch shares the ``{batch:ID}`` hash tag."""
    return f"{validate_key_prefix(prefix)}:{{batch:{batch_id}}}{':' + part if part else ''}"


def content_field(section: str, content: str) -> str:
    """The content-index field of a skill: its section as stored, then its normalised content."""
    return f"{section}{_FIELD_SEPARATOR}{normalise_content(content)}"


def decision_field(id_a: str, id_b: str) -> str:
    """The decisions-hash field of a pair of skills, the same whichever id comes first."""
    return ",".join(sorted((id_a, id_b)))


@dataclass(frozen=True)
class SkillbookKeys:
    """The key names of one skillbook; all share the hash tag ``{sb:NAME}``."""

    name: str
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        validate_skillbook_name(self.name)
        validate_key_prefix(self.prefix)

    @property
    def hash_tag(self) -> str:
        """The Redis Cluster hash tag every key of this skillbook contains."""
        return f"{{sb:{self.name}}}"

    @property
    def base(self) -> str:
        """The common start of every key of this skillbook."""
        return f"{self.prefix}:{self.hash_tag}"

    @property
    def version(self) -> str:
        """String: the current version (absent means 0)."""
        return f"{self.base}:version"

    @property
    def skills(self) -> str:
        """Hash: skill id -> skill JSON, with its insertion order under "_order"."""
        return f"{self.base}:skills"

    @property
    def provenance(self) -> str:
        """Hash: skill id -> its occurrences and totals (kept beside the skills: snapshots never read it)."""
        return f"{self.base}:provenance"

    @property
    def meta(self) -> str:
        """Hash: next_id, next_order, created_at, incarnation."""
        return f"{self.base}:meta"

    @property
    def content(self) -> str:
        """Hash: content field -> JSON list of the active skills saying it (duplicate-ADD detection)."""
        return f"{self.base}:content"

    @property
    def decisions(self) -> str:
        """Hash: "id_a,id_b" -> similarity decision JSON."""
        return f"{self.base}:decisions"

    @property
    def changes(self) -> str:
        """Stream: the change log, one entry per version."""
        return f"{self.base}:changes"

    @property
    def change_digests(self) -> str:
        """Hash: version -> the digest JSON of a change-log entry that touched many skills."""
        return f"{self.base}:changes:digests"

    @property
    def additions_in_flight(self) -> str:
        """Stream: the ADDs learn slots are about to make (store/additions_in_flight.py); transient."""
        return f"{self.base}:adds:inflight"

    @property
    def stats(self) -> str:
        """Hash: the store's counters (STATS_FIELDS)."""
        return f"{self.base}:stats"

    @property
    def embeddings(self) -> str:
        """Hash: cached embeddings of skill texts, by content hash (model and text)."""
        return f"{self.base}:embeddings"

    @property
    def compact_snapshot(self) -> str:
        """Hash: version, incarnation and data of a persisted compact snapshot (derived: not backed up)."""
        return f"{self.base}:compact"

    @property
    def inbox(self) -> str:
        """Stream: traces appended for the nightly run."""
        return f"{self.base}:inbox"

    @property
    def nightly(self) -> str:
        """Hash: the nightly job's cursor (last inbox entry learned) and its current run."""
        return f"{self.base}:nightly"

    @property
    def nightly_lock(self) -> str:
        """String: the lock of the nightly run in progress."""
        return f"{self.base}:nightly:lock"

    @property
    def nightly_reports(self) -> str:
        """List: nightly run reports as JSON, newest first."""
        return f"{self.base}:nightly:reports"

    @property
    def labels(self) -> str:
        """Hash: label name -> the version it points at."""
        return f"{self.base}:labels"

    @property
    def label_log(self) -> str:
        """Stream: every label move, with its actor, note and the evaluation that justified it."""
        return f"{self.base}:labels:log"

    @property
    def label_outcomes(self) -> str:
        """Hash: per label, how many executions it served and how many succeeded or failed."""
        return f"{self.base}:labels:outcomes"

    @property
    def proposals(self) -> str:
        """Hash: proposal id -> proposal JSON (its operations, evidence, status and decision)."""
        return f"{self.base}:proposals"

    @property
    def proposal_queue(self) -> str:
        """Sorted set: the ids of pending proposals, scored by when they were proposed."""
        return f"{self.base}:proposals:pending"

    @property
    def proposal_decisions(self) -> str:
        """String: a counter every decision bumps, so WATCHing it guards one that makes no version."""
        return f"{self.base}:proposals:decided"

    def proposal_signature(self, digest: str) -> str:
        """String: the id of the open proposal carrying the operations ``digest`` names (merging)."""
        return f"{self.base}:proposals:same:{digest}"

    @property
    def proposal_signature_pattern(self) -> str:
        """SCAN pattern matching every proposal-signature key of this skillbook."""
        return f"{self.base}:proposals:same:*"

    @property
    def review_policy(self) -> str:
        """String: the review policy's JSON; absent means auto (every update applies at once)."""
        return f"{self.base}:review"

    @property
    def evaluations(self) -> str:
        """List: evaluation reports as JSON, newest first."""
        return f"{self.base}:evaluations"

    def idempotency(self, key: str) -> str:
        """String with a TTL: the recorded result of the apply that carried ``key``."""
        return f"{self.base}:idem:{key}"

    @property
    def idempotency_pattern(self) -> str:
        """SCAN pattern matching every idempotency key of this skillbook."""
        # Names and prefixes exclude the glob characters * ? [ ] \, so no escaping is needed.
        return f"{self.base}:idem:*"

    def fixed(self) -> tuple[str, ...]:
        """Every key of this skillbook except the idempotency keys."""
        return (
            self.version,
            self.skills,
            self.provenance,
            self.meta,
            self.content,
            self.decisions,
            self.changes,
            self.change_digests,
            self.additions_in_flight,
            self.stats,
            self.embeddings,
            self.compact_snapshot,
            self.inbox,
            self.nightly,
            self.nightly_lock,
            self.nightly_reports,
            self.labels,
            self.label_log,
            self.label_outcomes,
            self.proposals,
            self.proposal_queue,
            self.proposal_decisions,
            self.review_policy,
            self.evaluations,
        )
