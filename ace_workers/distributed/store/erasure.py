"""Forgetting traces: find every record the fleet keeps of the traces a selector matches, and erase it.

Where a trace's content lives (the key layout is in :mod:`.keys`):

- a batch's ``items`` (the inputs as sent) and ``records`` (each sample's final payload, or its
  failure with the input): the item becomes ``{"erased": true}``, the record keeps its outcome
  only, so the batch's counts still add up;
- dead letters and deferred (parked) steps: each carries the step message's payload; removed;
- claim-checked values (``claim:SHA256``): a sample or trace too big for a message; deleted;
- a skillbook's inbox (traces waiting for the nightly run): the entry is deleted;
- provenance (``skillbook why``): each occurrence naming a matched sample keeps only its
  operation type and time;
- the change log and review proposals: the operations' evidence and justification, the
  reasoning and the source's trace id and insight of a write a matched sample made are blanked
  (the operations themselves, what the skillbook became, stay: rollback and diff need them);
- a skill's own ``evidence`` and ``justification`` (copied from the operation that wrote it),
  in the skills hash and in every change-log image, wherever they are the text a matched
  sample's write gave them; the skill's content stays (it is what the skillbook says: archive
  or remove the derived skills for that);
- evaluation and nightly reports that carry a matched trace: removed.

What holds no trace content is left alone: batch counters and markers, idempotency records (a
version and skill ids), the embedding cache (vectors of skill texts), intake's idempotency keys
(a batch id), the limiter and admission state. Backups are files: a backup made before the
erasure still holds what it held.

Samples in flight are not touched here: :func:`find` reports the running batches holding a
matched sample, and the operation waits for them to finish first (operations/forget.py says why).
Every write touches one key, or keys of one hash tag in one transaction, so a Redis Cluster
takes it as it is.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.exceptions import WatchError

from .batches import RECENT_BATCHES, BatchState, BatchStore, parse_sample_key
from .erasure_selector import Matched, Selector, traces_of
from .errors import VersionConflict
from .keys import (
    INBOX_TRACE_FIELD,
    META_INCARNATION,
    SkillbookKeys,
    batch_key,
    claim_digest,
    dead_letters_key,
    deferred_key,
    deferring_tenants_key,
)
from .replies import decode_text

__all__ = ["ERASED", "PLACES", "ErasurePlan", "erase", "find"]

logger = logging.getLogger(__name__)

# What stands where erased content was.
ERASED = {"erased": True}
# The places an erasure counts, in the order it reports them.
PLACES = (
    "batch_items",
    "batch_records",
    "dead_letters",
    "deferred_steps",
    "claims",
    "inbox",
    "provenance",
    "changelog",
    "skill_evidence",
    "proposals",
    "evaluations",
    "nightly_reports",
)
# Keys of a write's source that may carry what a trace said or who it was.
_SOURCE_TEXT_KEYS = ("trace_id", "sample_id", "insight", "otel_trace_id")
# Fields of an operation that quote or paraphrase the trace.
_OPERATION_TEXT_KEYS = ("evidence", "justification")
# The operations that give a skill its evidence and justification.
_WRITING = ("ADD", "UPDATE")
_ATTEMPTS = 10
_CHUNK = 200


@dataclass
class ErasurePlan:
    """What a selector matched: the samples, the running batches holding some, the skills derived."""

    selector: Selector
    matched: Matched = field(default_factory=Matched)
    in_flight: dict[str, int] = field(default_factory=dict)  # running batch id -> matched samples in it
    # skillbook -> skill ids all of whose learning evidence came from matched samples
    derived: dict[str, list[str]] = field(default_factory=dict)
    # skillbook -> pending proposals every write of which a matched sample made
    derived_proposals: dict[str, list[str]] = field(default_factory=dict)


def _load(raw: Any) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return None


class _Claims:
    """Reads claim-checked payload values (and notes their keys, to delete with what named them)."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def keys_in(self, payload: Any) -> list[str]:
        """The claim keys ``payload`` names (its ``sample`` and ``trace`` fields)."""
        if not isinstance(payload, dict):
            return []
        found = []
        for value in (payload.get("sample"), payload.get("trace")):
            reference = value.get("claim") if isinstance(value, dict) else None
            if isinstance(reference, str) and claim_digest(self.prefix, reference) is not None:
                found.append(reference)
        return found

    def resolved(self, payload: Any) -> Any:
        """``payload`` with its claimed fields read back (a claim gone stays a reference)."""
        if not isinstance(payload, dict) or not self.keys_in(payload):
            return payload
        out = dict(payload)
        for name in ("sample", "trace"):
            value = out.get(name)
            if isinstance(value, dict) and claim_digest(self.prefix, str(value.get("claim"))) is not None:
                raw = self.client.get(value["claim"])
                if raw is not None:
                    out[name] = _load(raw)
        return out


def _selects(selector: Selector, payload: Any) -> bool:
    return any(selector.matches(trace) for trace in traces_of(payload))


def _visible_batches(batches: BatchStore) -> list[str]:
    return list(
        dict.fromkeys([*batches.running(), *(batch_id for batch_id, _ in batches.recent(RECENT_BATCHES))])
    )


def find(
    client: redis.Redis,
    prefix: str,
    selector: Selector,
    in_scope: Callable[[str], bool],
    *,
    batches: BatchStore,
    say: Callable[[str], None],
) -> ErasurePlan:
    """The samples ``selector`` matches in the batches (their inputs) and the parked messages, and
    the running batches that hold some; only skillbooks ``in_scope`` says yes to are looked at."""
    plan = ErasurePlan(selector)
    claims = _Claims(client, prefix)
    batch_ids = _visible_batches(batches)
    for number, batch_id in enumerate(batch_ids, 1):
        if number % 50 == 0:
            say(f"scanned {number} of {len(batch_ids)} batches")
        try:
            status = batches.status(batch_id)
        except LookupError:
            continue  # expired since listed
        if in_scope(status.skillbook):
            found = _match_inputs(client, prefix, batch_id, plan, claims)
            if found and status.state is BatchState.RUNNING:
                plan.in_flight[batch_id] = found
    for _raw, message in _parked_messages(client, prefix):
        kwargs = _kwargs_of(message)
        if not in_scope(str(kwargs.get("skillbook", ""))):
            continue
        payload = claims.resolved(message.get("payload"))
        if _selects(selector, payload) or (
            selector.kind == "batch" and kwargs.get("batch_id") == selector.value
        ):
            plan.matched.add(kwargs.get("batch_id"), kwargs.get("sample_index"), payload)
    return plan


def _match_inputs(client: redis.Redis, prefix: str, batch_id: str, plan: ErasurePlan, claims: _Claims) -> int:
    """Add the inputs of ``batch_id`` the selector matches to ``plan``; how many matched."""
    selector, found = plan.selector, 0
    for index, raw in enumerate(client.lrange(batch_key(prefix, batch_id, "items"), 0, -1), 1):
        payload = claims.resolved(_load(raw))
        if (selector.kind == "batch" and selector.value == batch_id) or _selects(selector, payload):
            plan.matched.add(batch_id, index, payload)
            found += 1
    return found


def _kwargs_of(message: dict[str, Any]) -> dict[str, Any]:
    """The step kwargs a parked message carries (``{}`` for a message without)."""
    kwargs = message.get("kwargs")
    return kwargs if isinstance(kwargs, dict) else {}


def _parked_messages(client: redis.Redis, prefix: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Every dead letter and deferred step message, as (raw, parsed), the parsed one a dict."""
    for raw in client.lrange(dead_letters_key(prefix), 0, -1):
        parsed = _load(raw)
        if isinstance(parsed, dict):
            yield raw, parsed
    for tenant in client.smembers(deferring_tenants_key(prefix)):
        for _field, raw in client.hgetall(deferred_key(prefix, decode_text(tenant))).items():
            parsed = _load(raw)
            if isinstance(parsed, dict):
                yield raw, parsed


def erase(
    client: redis.Redis,
    prefix: str,
    plan: ErasurePlan,
    skillbooks: Iterable[str],
    *,
    dry_run: bool,
    say: Callable[[str], None],
    every_claim: bool = True,
) -> dict[str, int]:
    """Erase what ``plan`` matched from every place (count only, ``dry_run``); how many records per place.

    ``every_claim``: also delete any claim-checked value the selector matches, named by no record
    left (the fleet's operator). A claim names no tenant, so a tenant's erasure deletes only the
    claims its own records name.

    Also fills ``plan.derived``: per skillbook, the skills whose every learning occurrence
    named a matched sample (read before their provenance is blanked).
    """
    counts = dict.fromkeys(PLACES, 0)
    claims = _Claims(client, prefix)
    matched, selector = plan.matched, plan.selector
    doomed_claims: set[str] = set()
    _erase_batches(client, prefix, matched, claims, doomed_claims, counts, dry_run)
    _erase_parked(client, prefix, plan, claims, doomed_claims, counts, dry_run)
    for key in _claim_keys(client, prefix) if every_claim else []:
        value = _load(client.get(key))
        if key in doomed_claims or selector.matches(value) or _selects(selector, {"sample": value}):
            doomed_claims.add(key)
    counts["claims"] = len(doomed_claims)
    if doomed_claims and not dry_run:
        for key in doomed_claims:  # one DEL each: a cluster spreads claims over its slots
            client.delete(key)
    for name in skillbooks:
        say(f"erasing in skillbook {name}")
        keys = SkillbookKeys(name, prefix)
        counts["inbox"] += _erase_inbox(client, keys, selector, dry_run)
        derived, blanked, written = _erase_provenance(client, keys, matched, dry_run)
        if derived:
            plan.derived[name] = derived
        counts["provenance"] += blanked
        entries, skills, tainted = _erase_skill_history(client, keys, matched, written, dry_run)
        counts["changelog"] += entries
        counts["skill_evidence"] += skills
        scrubbed, only_matched = _erase_proposals(client, keys, matched, tainted, dry_run)
        counts["proposals"] += scrubbed
        if only_matched:
            plan.derived_proposals[name] = only_matched
        counts["evaluations"] += _erase_reports(client, keys.evaluations, plan, dry_run)
        counts["nightly_reports"] += _erase_reports(client, keys.nightly_reports, plan, dry_run)
    return counts


# -- batches ----------------------------------------------------------------------------------


def _erase_batches(
    client: redis.Redis,
    prefix: str,
    matched: Matched,
    claims: _Claims,
    doomed_claims: set[str],
    counts: dict[str, int],
    dry_run: bool,
) -> None:
    """Blank the matched samples' inputs and records (every epoch's), noting the claims they name."""
    by_batch: dict[str, set[int]] = {}
    for batch_id, index in matched.samples:
        by_batch.setdefault(batch_id, set()).add(index)
    erased_json = json.dumps(ERASED)
    for batch_id, indexes in sorted(by_batch.items()):
        items_key = batch_key(prefix, batch_id, "items")
        records_key = batch_key(prefix, batch_id, "records")
        for index in sorted(indexes):
            raw = client.lindex(items_key, index - 1)
            if raw is None or _load(raw) == ERASED:
                continue
            doomed_claims.update(claims.keys_in(_load(raw)))
            counts["batch_items"] += 1
            if not dry_run:
                client.lset(items_key, index - 1, erased_json)
        for sample, raw in client.hgetall(records_key).items():
            _epoch, index = parse_sample_key(decode_text(sample))
            record = _load(raw)
            if index not in indexes or not isinstance(record, dict) or record.get("erased"):
                continue
            doomed_claims.update(claims.keys_in(record.get("payload")))
            counts["batch_records"] += 1
            if not dry_run:
                # The outcome stays: the batch's report still counts the sample done or failed.
                kept = {"outcome": record.get("outcome"), **ERASED}
                client.hset(records_key, sample, json.dumps(kept))


def _erase_parked(
    client: redis.Redis,
    prefix: str,
    plan: ErasurePlan,
    claims: _Claims,
    doomed_claims: set[str],
    counts: dict[str, int],
    dry_run: bool,
) -> None:
    """Remove the dead letters and deferred steps of matched samples (or carrying a matched trace)."""

    def doomed(message: dict[str, Any]) -> bool:
        kwargs = _kwargs_of(message)
        payload = message.get("payload")
        source = {"batch_id": kwargs.get("batch_id"), "sample_index": kwargs.get("sample_index")}
        return plan.matched.names(source) or _selects(plan.selector, claims.resolved(payload))

    letters = dead_letters_key(prefix)
    for raw in client.lrange(letters, 0, -1):
        message = _load(raw)
        if isinstance(message, dict) and doomed(message):
            doomed_claims.update(claims.keys_in(message.get("payload")))
            counts["dead_letters"] += 1
            if not dry_run:
                client.lrem(letters, 1, raw)  # type: ignore[arg-type]  # bytes work
    for tenant in client.smembers(deferring_tenants_key(prefix)):
        parked = deferred_key(prefix, decode_text(tenant))
        for entry, raw in client.hgetall(parked).items():
            message = _load(raw)
            if isinstance(message, dict) and doomed(message):
                doomed_claims.update(claims.keys_in(message.get("payload")))
                counts["deferred_steps"] += 1
                if not dry_run:
                    # The entry and its place in the release order share the tenant's hash tag.
                    with client.pipeline(transaction=True) as pipe:
                        pipe.hdel(parked, entry)
                        pipe.zrem(deferred_key(prefix, decode_text(tenant), "order"), entry)
                        pipe.execute()


def _claim_keys(client: redis.Redis, prefix: str) -> list[str]:
    return [decode_text(key) for key in client.scan_iter(match=f"{prefix}:claim:*", count=_CHUNK)]


# -- a skillbook's records ----------------------------------------------------------------------


def _erase_inbox(client: redis.Redis, keys: SkillbookKeys, selector: Selector, dry_run: bool) -> int:
    """Delete the inbox entries whose trace the selector matches."""
    gone: list[Any] = []
    for entry_id, fields in client.xrange(keys.inbox) or []:
        trace = _load(_stream_fields(fields).get(INBOX_TRACE_FIELD, "null"))
        if selector.matches(trace):
            gone.append(entry_id)
    if gone and not dry_run:
        client.xdel(keys.inbox, *gone)
    return len(gone)


def _is_learning(occurrence: Any) -> bool:
    """True for an occurrence a sample made (it names a batch or a trace), not a person or a merge."""
    return isinstance(occurrence, dict) and any(
        occurrence.get(key) is not None for key in ("batch_id", "trace_id", "sample_id")
    )


def _erase_provenance(
    client: redis.Redis, keys: SkillbookKeys, matched: Matched, dry_run: bool
) -> tuple[list[str], int, set[str]]:
    """Blank the occurrences naming matched samples: (the skills derived only from them, how many
    occurrences went, the skills a matched sample's ADD or UPDATE wrote the text of).

    A skill is derived only from the matched samples when it has learning occurrences, every one
    names a matched sample, and none was dropped (its totals count no more than it keeps): an
    occurrence dropped long ago may have come from anyone, so such a skill is kept.
    """
    for _ in range(_ATTEMPTS):
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(keys.provenance)  # type: ignore[no-untyped-call]
                raw_all = pipe.hgetall(keys.provenance)
                derived: list[str] = []
                blanked, written = 0, set()
                updates: dict[Any, str] = {}
                for field, raw in raw_all.items():
                    record = _load(raw)
                    if not isinstance(record, dict) or not isinstance(record.get("occurrences"), list):
                        continue
                    occurrences = record["occurrences"]
                    hits = [i for i, o in enumerate(occurrences) if isinstance(o, dict) and matched.names(o)]
                    if not hits:
                        continue
                    learning = [o for o in occurrences if _is_learning(o)]
                    totals = record.get("occurrence_totals") or {}
                    kept_all = sum(v for v in totals.values() if isinstance(v, int)) <= len(occurrences)
                    if learning and len(hits) == len(learning) and kept_all:
                        derived.append(decode_text(field))
                    if any(occurrences[i].get("operation_type") in _WRITING for i in hits):
                        written.add(decode_text(field))
                    for i in hits:
                        occurrences[i] = {
                            "operation_type": occurrences[i].get("operation_type"),
                            "time": occurrences[i].get("time"),
                            **ERASED,
                        }
                    blanked += len(hits)
                    updates[field] = json.dumps(record, ensure_ascii=False)
                if updates and not dry_run:
                    pipe.multi()
                    pipe.hset(keys.provenance, mapping=updates)
                    pipe.execute()
                return sorted(derived), blanked, written
            except WatchError:
                continue
    raise VersionConflict(keys.name, _ATTEMPTS, "forget (provenance)")


def _scrub_source(source: Any) -> Any:
    if not isinstance(source, dict):
        return source
    return {k: v for k, v in source.items() if k not in _SOURCE_TEXT_KEYS} | ERASED


def _scrub_operations(operations: Any) -> Any:
    if not isinstance(operations, list):
        return operations
    scrubbed = []
    for op in operations:
        if isinstance(op, dict):
            op = {**op, **dict.fromkeys(_OPERATION_TEXT_KEYS, "")}
            if op.get("insight_source") is not None:
                op["insight_source"] = _scrub_source(op["insight_source"])
        scrubbed.append(op)
    return scrubbed


def _names_any(matched: Matched, sources: Iterable[Any]) -> bool:
    return any(matched.names(source) for source in sources)


def _change_sources(fields: dict[str, Any]) -> list[Any]:
    batch = _load(fields.get("batch") or "null")
    sources = [_load(fields.get("source") or "null")]
    if isinstance(batch, dict) and isinstance(batch.get("operations"), list):
        sources += [op.get("insight_source") for op in batch["operations"] if isinstance(op, dict)]
    return sources


def _stream_fields(fields: Any) -> dict[str, str]:
    """A stream entry's fields as text; a cluster transaction hands them back as a flat list."""
    pairs = zip(fields[::2], fields[1::2], strict=True) if isinstance(fields, list) else fields.items()
    return {decode_text(key): decode_text(value) for key, value in pairs}


def _erase_skill_history(
    client: redis.Redis, keys: SkillbookKeys, matched: Matched, written: set[str], dry_run: bool
) -> tuple[int, int, set[str]]:
    """Blank what matched samples' writes said, in the change log and in the skills; (entries, skills,
    the texts blanked, which the proposals' images of the skills may hold too).

    The texts to blank are the evidence and justification of the operations a matched sample
    wrote (and those the skills in ``written`` hold now, for a change log trimmed since): a
    skill carries its operation's text, and every later image of that skill does too. A stream
    entry cannot be edited: the stream is written again, every entry under its own id, in one
    transaction watching the version (a write meanwhile makes it try again).
    """
    for _ in range(_ATTEMPTS):
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(keys.version, keys.changes, keys.skills)  # type: ignore[no-untyped-call]
                entries = [
                    (decode_text(entry_id or b""), _stream_fields(fields))
                    for entry_id, fields in pipe.xrange(keys.changes) or []
                ]
                skills = {decode_text(k): _load(v) for k, v in pipe.hgetall(keys.skills).items()}
                tainted = {
                    text
                    for skill_id in written
                    if isinstance(skills.get(skill_id), dict)
                    for text in _texts_of(skills[skill_id])
                }
                hits = _scrub_matched_entries(entries, matched, tainted)
                images = sum(_blank_images(fields, tainted) for _entry_id, fields in entries)
                blanked = {
                    skill_id: json.dumps(image, ensure_ascii=False)
                    for skill_id, image in skills.items()
                    if isinstance(image, dict) and _blank_texts(image, tainted)
                }
                if (hits or images or blanked) and not dry_run:
                    pipe.multi()
                    # Lessons learn slots are about to add may come from the matched traces.
                    pipe.delete(keys.additions_in_flight)
                    if hits or images:
                        # Stored digests list the first operations of big entries: derived from the
                        # entries, so dropped with them (a reader digests an entry again).
                        pipe.delete(keys.changes, keys.change_digests)
                        for entry_id, fields in entries:
                            pipe.xadd(keys.changes, fields, id=entry_id)  # type: ignore[arg-type]
                    if blanked:
                        pipe.hset(keys.skills, mapping=blanked)  # type: ignore[arg-type]
                        # Snapshots (a process's cached one, the persisted compact one) hold the
                        # texts as they were and are brought forward only through new versions:
                        # a new incarnation makes every reader read the skills whole again, and a
                        # compact value of the old one is never loaded or written over a new one.
                        pipe.hset(keys.meta, META_INCARNATION, uuid.uuid4().hex)
                        pipe.delete(keys.compact_snapshot)
                    pipe.execute()
                return hits, len(blanked), tainted
            except WatchError:
                continue
    raise VersionConflict(keys.name, _ATTEMPTS, "forget (change log)")


def _scrub_matched_entries(
    entries: list[tuple[str, dict[str, str]]], matched: Matched, tainted: set[str]
) -> int:
    """Blank the entries a matched sample wrote (in place), adding their operations' texts to ``tainted``."""
    hits = 0
    for _entry_id, fields in entries:
        if fields.get("erased") or not _names_any(matched, _change_sources(fields)):
            continue
        hits += 1
        batch = _load(fields.get("batch") or "null")
        if isinstance(batch, dict):
            for op in batch.get("operations") or []:
                if isinstance(op, dict):
                    tainted.update(_texts_of(op))
            batch["reasoning"] = ""
            batch["operations"] = _scrub_operations(batch.get("operations"))
            fields["batch"] = json.dumps(batch, ensure_ascii=False)
        fields["source"] = json.dumps(_scrub_source(_load(fields.get("source") or "null")))
        fields["erased"] = "1"
    return hits


def _texts_of(thing: dict[str, Any]) -> set[str]:
    """The non-empty evidence and justification of an operation or a skill image."""
    return {text for key in _OPERATION_TEXT_KEYS if isinstance(text := thing.get(key), str) and text}


def _blank_texts(image: dict[str, Any], tainted: set[str]) -> bool:
    """Blank the evidence and justification of ``image`` that are tainted texts; True if any was."""
    changed = False
    for key in _OPERATION_TEXT_KEYS:
        if image.get(key) in tainted:
            image[key] = ""
            changed = True
    return changed


def _blank_images(fields: dict[str, str], tainted: set[str]) -> int:
    """Blank tainted texts in a change-log entry's before and after images; how many images changed."""
    changed = 0
    for name in ("before", "after"):
        images = _load(fields.get(name) or "null")
        if not isinstance(images, dict):
            continue
        hit = [image for image in images.values() if isinstance(image, dict) and _blank_texts(image, tainted)]
        if hit:
            fields[name] = json.dumps(images, ensure_ascii=False)
            changed += len(hit)
    return changed


def _erase_proposals(
    client: redis.Redis, keys: SkillbookKeys, matched: Matched, tainted: set[str], dry_run: bool
) -> tuple[int, list[str]]:
    """Blank the evidence of proposals a matched sample proposed (pending ones keep their operations),
    and the ``tainted`` texts in any proposal's images of the skills it saw: (how many proposals
    changed, the pending ones every write of which a matched sample made)."""
    for _ in range(_ATTEMPTS):
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(keys.proposals)  # type: ignore[no-untyped-call]
                updates: dict[Any, str] = {}
                only_matched: list[str] = []
                for field, raw in pipe.hgetall(keys.proposals).items():
                    proposal = _load(raw)
                    if not isinstance(proposal, dict):
                        continue
                    if proposal.get("status") == "pending" and _only_from(matched, proposal):
                        only_matched.append(decode_text(field))
                    if _scrub_proposal(proposal, matched, tainted):
                        updates[field] = json.dumps(proposal, ensure_ascii=False)
                if updates and not dry_run:
                    pipe.multi()
                    pipe.hset(keys.proposals, mapping=updates)
                    pipe.execute()
                return len(updates), sorted(only_matched)
            except WatchError:
                continue
    raise VersionConflict(keys.name, _ATTEMPTS, "forget (proposals)")


def _only_from(matched: Matched, proposal: dict[str, Any]) -> bool:
    """True if every write that proposed ``proposal`` (its own, and each merged in) is a matched sample's."""
    occurrences = [o for o in proposal.get("occurrences") or [] if isinstance(o, dict)]
    sources = [o.get("source") for o in occurrences] or [proposal.get("source")]
    return all(matched.names(source) for source in sources)


def _scrub_proposal(proposal: dict[str, Any], matched: Matched, tainted: set[str]) -> bool:
    """Blank, in place, what a matched sample's write put in ``proposal``; True if anything was."""
    images = proposal.get("base_images")
    blanked = isinstance(images, dict) and any(
        [_blank_texts(image, tainted) for image in images.values() if isinstance(image, dict)]
    )
    occurrences = [o for o in proposal.get("occurrences") or [] if isinstance(o, dict)]
    sources = [proposal.get("source"), *(proposal.get("insight_sources") or [])]
    for occurrence in occurrences:
        sources += [occurrence.get("source"), *(occurrence.get("insight_sources") or [])]
    if not _names_any(matched, sources):
        return blanked
    proposal["reasoning"] = ""
    proposal["operations"] = _scrub_operations(proposal.get("operations"))
    proposal["source"] = _scrub_source(proposal.get("source"))
    proposal["insight_sources"] = [_scrub_source(s) for s in proposal.get("insight_sources") or []]
    proposal["occurrences"] = [
        {
            **occurrence,
            "source": _scrub_source(occurrence.get("source")),
            "insight_sources": [_scrub_source(s) for s in occurrence.get("insight_sources") or []],
        }
        for occurrence in occurrences
    ]
    return True


def _carries_matched(value: Any, plan: ErasurePlan, depth: int = 0) -> bool:
    """True if a report holds, at any depth, a trace the selector matches or a source naming a match."""
    if depth > 32:
        return False
    if isinstance(value, dict):
        if plan.selector.matches(value) or plan.matched.names(value):
            return True
        return any(_carries_matched(v, plan, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_carries_matched(v, plan, depth + 1) for v in value)
    return False


def _erase_reports(client: redis.Redis, key: str, plan: ErasurePlan, dry_run: bool) -> int:
    """Remove the reports of list ``key`` (evaluations, nightly runs) that carry a matched trace."""
    gone = [raw for raw in client.lrange(key, 0, -1) if _carries_matched(_load(raw), plan)]
    if not dry_run:
        for raw in gone:
            client.lrem(key, 1, raw)  # type: ignore[arg-type]  # bytes work
    return len(gone)
