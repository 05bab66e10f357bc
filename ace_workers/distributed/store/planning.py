"""What an apply changes, computed in Python from only the skills and index entries it touches.

The store reads the few skills and content-index fields a batch can depend
on, loads them into a small core Skillbook and lets ``Skillbook.apply_update``
do the work, so the semantics are the core's by construction. The plan is
final once everything it depends on was read from Redis:

* every skill id the batch names (present or not);
* every content-index field an ADD looks up, and every skill those fields
  list (a duplicate-ADD check must see the active skills saying the same);
* every id the plan allocates (to skip ids that exist, as the core does);
* the index fields whose membership the changes move.

Anything missing is reported, the store fetches it under the same WATCH and
plans again; usually two rounds.

A skill's provenance (its occurrences and totals, core/skill_provenance.py) is
kept in a hash of its own beside the skills hash, so snapshots, the change
log and diffs never carry it; the plan reads it with the skill, hands the
core the whole skill, and splits the outcome again (``split_provenance``).

Each stored skill carries its insertion sequence number (``"_order"`` in its
JSON), so the small skillbook holds its skills in the core's dict order:
where two active skills of a section say the same thing, a duplicate ADD
names the same one the core would, and snapshots list skills as the core does.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.skill_provenance import DEFAULT_KEEP, PROVENANCE_FIELDS
from ...core.skillbook import ApplyReport, Skillbook
from ...core.updates import UpdateBatch
from ...counts import counted
from .changelog import SkillImage
from .errors import CorruptDataError
from .keys import content_field
from .replies import decode_json, decode_text

__all__ = [
    "ORDER_KEY",
    "ApplyPlan",
    "SkillReads",
    "active_growth",
    "adds_beyond_room",
    "count_active",
    "decode_stored_skill",
    "encode_stored_skill",
    "is_active",
    "plan_batch",
    "plan_index",
    "provenance_writes",
    "split_provenance",
    "report_in_batch_indices",
    "skill_field",
    "skill_order_key",
    "without_operations",
]

logger = logging.getLogger(__name__)

_ID_NUMBER = re.compile(r"-(\d+)$")

ORDER_KEY = "_order"  # the insertion sequence number, stored beside the skill's fields


def encode_stored_skill(image: Mapping[str, Any], order: int) -> str:
    """A skill's value in the skills hash: its file-format dict plus its insertion order."""
    return json.dumps({**image, ORDER_KEY: order}, ensure_ascii=False)


def decode_stored_skill(raw: bytes | str, key: str, skill_id: str) -> tuple[dict[str, Any], int | None]:
    """A skills-hash value (field ``skill_id`` of ``key``) as (file-format dict, insertion order or None).

    Raises:
        CorruptDataError: the value is not a JSON object.
    """
    image = decode_json(raw, key, skill_id)
    if not isinstance(image, dict):
        raise CorruptDataError(key, f"field {skill_id!r} holds a JSON {type(image).__name__}, not a skill")
    order = image.pop(ORDER_KEY, None)
    return image, order if isinstance(order, int) else None


Provenance = dict[str, Any]  # {"occurrences": [...], "occurrence_totals": {...}}


def split_provenance(image: Mapping[str, Any]) -> tuple[dict[str, Any], Provenance | None]:
    """A skill's file-format dict as (the dict without provenance, its provenance or None if it has none).

    An image of an older store may hold the occurrences as ``sources``: they become provenance too.
    """
    rest = {key: value for key, value in image.items() if key not in PROVENANCE_FIELDS and key != "sources"}
    occurrences = image.get("occurrences", image.get("sources")) or []
    totals = image.get("occurrence_totals") or {}
    if not occurrences and not totals:
        return rest, None
    return rest, {"occurrences": occurrences, "occurrence_totals": totals}


def provenance_writes(
    before: Mapping[str, Provenance | None], after: Mapping[str, Provenance | None]
) -> dict[str, Provenance | None]:
    """The provenance-hash fields to write: skill id -> its new provenance, or None to delete it."""
    return {
        skill_id: new
        for skill_id, new in after.items()
        if new != before.get(skill_id) and (new is not None or before.get(skill_id) is not None)
    }


@dataclass
class SkillReads:
    """What was read from Redis under the current WATCH: skills by id, their provenance, index fields."""

    key: str  # the skills hash read, named when a value in it is corrupt
    skills: dict[str, SkillImage] = field(default_factory=dict)  # None: the id does not exist
    order: dict[str, int] = field(default_factory=dict)  # insertion order of the present skills
    fields: dict[str, list[str]] = field(default_factory=dict)  # []: no active skill says it
    provenance: dict[str, Provenance | None] = field(default_factory=dict)  # of the skills read

    def add_provenance(self, skill_id: str, raw: bytes | str | None, key: str) -> None:
        """Record the provenance-hash value read for ``skill_id`` (hash ``key``; None: none kept)."""
        value = decode_json(raw, key, skill_id) if raw is not None else None
        if value is not None and not isinstance(value, dict):
            raise CorruptDataError(
                key, f"field {skill_id!r} holds a JSON {type(value).__name__}, not provenance"
            )
        self.provenance[skill_id] = value

    def whole(self, skill_id: str) -> dict[str, Any]:
        """The present skill ``skill_id`` with its provenance, as the core reads a skill."""
        image = self.skills[skill_id]
        assert image is not None  # callers pass present skills only
        return {**image, **(self.provenance.get(skill_id) or {})}

    def add_skill(self, skill_id: str, raw: bytes | str | None) -> None:
        """Record the skills-hash value read for ``skill_id`` (None: no such skill)."""
        if raw is None:
            self.skills[skill_id] = None
            return
        image, order = decode_stored_skill(raw, self.key, skill_id)
        self.skills[skill_id] = image
        if order is not None:
            self.order[skill_id] = order

    def sort_key(self, skill_id: str) -> tuple[int, tuple[int, str]]:
        """Insertion order, for skills stored with one; id order after them otherwise."""
        order = self.order.get(skill_id)
        return (0, (order, skill_id)) if order is not None else (1, skill_order_key(skill_id))


@dataclass
class ApplyPlan:
    """The outcome of an apply: report, changed skills and index entries, next id and order numbers."""

    report: ApplyReport
    next_id: int
    next_order: int
    changes: dict[str, tuple[SkillImage, SkillImage]]
    orders: dict[str, int]  # insertion order of every changed skill that still exists
    index_writes: dict[str, list[str]]
    missing_ids: set[str]
    missing_fields: set[str]
    provenance: dict[str, Provenance | None] = field(default_factory=dict)  # None: delete the field

    @property
    def complete(self) -> bool:
        """True when every skill and field the plan depends on was read."""
        return not self.missing_ids and not self.missing_fields

    def with_index(self, index_writes: dict[str, list[str]], missing_fields: set[str]) -> ApplyPlan:
        """This plan once the ids it missed turned out absent: same outcome, index writes redone."""
        return replace(self, index_writes=index_writes, missing_ids=set(), missing_fields=missing_fields)


def skill_order_key(skill_id: str) -> tuple[int, str]:
    """Approximate insertion order: ids are numbered as they are issued."""
    match = _ID_NUMBER.search(skill_id)
    return (int(match.group(1)) if match else -1, skill_id)


def skill_field(image: SkillImage) -> str | None:
    """The content-index field of a skill state, or None if it is absent or inactive."""
    if image is None or image.get("status", "active") != "active":
        return None
    return content_field(str(image["section"]), str(image["content"]))


def is_active(image: SkillImage) -> bool:
    """True for a skill state that exists and is active (not soft-deleted)."""
    return image is not None and image.get("status", "active") == "active"


def active_growth(changes: Mapping[str, tuple[SkillImage, SkillImage]]) -> int:
    """How many active skills ``changes`` add, net of those they remove or deactivate."""
    return sum(is_active(new) - is_active(old) for old, new in changes.values())


def count_active(raw_skills: Mapping[Any, bytes | str], key: str) -> int:
    """The active skills among the id -> value pairs of the skills hash ``key``."""
    return sum(
        is_active(decode_stored_skill(raw, key, decode_text(skill_id))[0])
        for skill_id, raw in raw_skills.items()
    )


def plan_batch(
    batch: UpdateBatch, reads: SkillReads, next_id: int, next_order: int, keep: int = DEFAULT_KEEP
) -> ApplyPlan:
    """Plan ``batch`` against ``reads``; ``next_id`` and ``next_order`` are the next numbers to issue.

    ``keep``: the occurrences each skill keeps (ACE_PROVENANCE_KEEP).
    """
    named = {op.skill_id for op in batch.operations if op.skill_id}
    lookups = {content_field(op.section.strip(), op.content) for op in batch.operations if op.type == "ADD"}
    missing_ids = {skill_id for skill_id in named if skill_id not in reads.skills}
    missing_fields = {f for f in lookups if f not in reads.fields}
    for lookup in lookups & reads.fields.keys():
        missing_ids.update(i for i in reads.fields[lookup] if i not in reads.skills)

    present = {i: image for i, image in reads.skills.items() if image is not None}
    book = Skillbook.from_dict(
        {
            "skills": {i: reads.whole(i) for i in sorted(present, key=reads.sort_key)},
            "next_id": next_id - 1,
        },
        source="redis skillbook",
    )
    book.provenance_keep = keep
    with _core_log_muted():
        # Logged once, after the commit, by the store: a plan may be recomputed or retried.
        report = book.apply_update(batch)
    after_book = book.to_dict()
    after: dict[str, dict[str, Any]] = {}
    after_provenance: dict[str, Provenance | None] = {i: None for i in present}
    for skill_id, whole in after_book["skills"].items():
        after[skill_id], after_provenance[skill_id] = split_provenance(whole)
    missing_ids.update(i for i in report.added if i not in reads.skills)

    # The core appends an added skill at the end of its dict: give it the next order number.
    orders: dict[str, int] = {}
    for skill_id in report.added:
        orders[skill_id], next_order = next_order, next_order + 1
    changes: dict[str, tuple[SkillImage, SkillImage]] = {}
    for skill_id in sorted(named | set(report.added), key=skill_order_key):
        old, new = present.get(skill_id), after.get(skill_id)
        if old != new:
            changes[skill_id] = (old, new)
        if new is not None and skill_id not in orders:
            if skill_id in reads.order:
                orders[skill_id] = reads.order[skill_id]
            else:  # stored without an order (written by something else): it goes last
                orders[skill_id], next_order = next_order, next_order + 1
    index_writes, missing_index = plan_index(changes, reads.fields)
    return ApplyPlan(
        report=report,
        next_id=int(after_book["next_id"]) + 1,
        next_order=next_order,
        changes=changes,
        orders={skill_id: orders[skill_id] for skill_id, (_, new) in changes.items() if new is not None},
        index_writes=index_writes,
        missing_ids=missing_ids,
        missing_fields=missing_fields | missing_index,
        provenance=provenance_writes({i: reads.provenance.get(i) for i in present}, after_provenance),
    )


def plan_index(
    changes: Mapping[str, tuple[SkillImage, SkillImage]], fields: Mapping[str, list[str]]
) -> tuple[dict[str, list[str]], set[str]]:
    """The content-index fields ``changes`` rewrite (field -> new id list, [] to delete).

    Returns the rewrites and the fields that must be read first (then the
    rewrites are empty): only fields whose membership changes are needed.
    """
    moves: list[tuple[str, str, bool]] = []  # (field, skill id, joins)
    for skill_id, (old, new) in changes.items():
        old_field, new_field = skill_field(old), skill_field(new)
        if old_field == new_field:
            continue
        if old_field is not None:
            moves.append((old_field, skill_id, False))
        if new_field is not None:
            moves.append((new_field, skill_id, True))
    missing = {f for f, _, _ in moves if f not in fields}
    if missing:
        return {}, missing
    members = {f: set(fields[f]) for f, _, _ in moves}
    for f, skill_id, joins in moves:
        if joins:
            members[f].add(skill_id)
        else:
            members[f].discard(skill_id)
    return (
        {f: sorted(ids, key=skill_order_key) for f, ids in members.items() if ids != set(fields[f])},
        set(),
    )


def adds_beyond_room(batch: UpdateBatch, report: ApplyReport, excess: int) -> list[int]:
    """Indices of the last ``excess`` ADDs of ``batch`` that add a skill (all of them if fewer).

    ``report`` is the batch's planned outcome: an ADD restating a skill, or one
    too long to add, adds nothing, so leaving it out would make no room.
    """
    restating = {index for index, _ in report.duplicates} | {index for index, _, _ in report.too_long}
    adding = [i for i, op in enumerate(batch.operations) if op.type == "ADD" and i not in restating]
    return adding[max(0, len(adding) - excess) :]


def without_operations(batch: UpdateBatch, kept: list[int]) -> UpdateBatch:
    """``batch`` holding only the operations at indices ``kept``."""
    return batch.model_copy(update={"operations": [batch.operations[i] for i in kept]})


def report_in_batch_indices(report: ApplyReport, kept: list[int], full: list[int]) -> ApplyReport:
    """A report planned on the ``kept`` operations, with indices of the whole batch and ``full`` set."""
    return replace(
        report,
        skipped=[(kept[i], op_type, skill_id) for i, op_type, skill_id in report.skipped],
        duplicates=[(kept[i], existing) for i, existing in report.duplicates],
        pinned=[(kept[i], skill_id) for i, skill_id in report.pinned],
        too_long=[(kept[i], op_type, why) for i, op_type, why in report.too_long],
        full=sorted(full),
    )


def log_report(name: str, version: int, batch: UpdateBatch, report: ApplyReport) -> None:
    """Log what an applied batch skipped or changed, once, after its commit."""
    if report.full:
        logger.warning(
            "skillbook %r version %d: the skillbook is full; skipped %s (#%s) and "
            "applied the rest of the batch (raise ACE_MAX_SKILLBOOK_SKILLS, or consolidate: "
            "ace-workers skillbook dedup %s)",
            name,
            version,
            counted(len(report.full), "ADD operation"),
            ", #".join(str(index) for index in report.full),
            name,
        )
    for index, op_type, skill_id in report.skipped:
        logger.warning(
            "skillbook %r version %d: skipped %s operation #%d: no skill with id %r",
            name,
            version,
            op_type,
            index,
            skill_id,
        )
    for index, skill_id in report.pinned:
        logger.warning(
            "skillbook %r version %d: skipped REMOVE operation #%d: skill %s is pinned",
            name,
            version,
            index,
            skill_id,
        )
    for index, op_type, why in report.too_long:
        logger.warning(
            "skillbook %r version %d: skipped %s operation #%d: %s", name, version, op_type, index, why
        )
    for index, existing in report.duplicates:
        logger.info(
            "skillbook %r version %d: skipped ADD operation #%d: skill %s already says it",
            name,
            version,
            index,
            existing,
        )
    not_added = {index for index, _ in report.duplicates} | set(report.full)
    not_added |= {index for index, _, _ in report.too_long}
    adds = [
        (index, op.skill_id)
        for index, op in enumerate(batch.operations)
        if op.type == "ADD" and index not in not_added
    ]
    for (index, asked), given in zip(adds, report.added, strict=True):
        if asked and asked != given:
            logger.warning(
                "skillbook %r version %d: ADD operation #%d asked for skill id %r, which exists or is "
                "not a valid id; it got %s",
                name,
                version,
                index,
                asked,
                given,
            )


class _ThreadMute(logging.Filter):
    """Drops records emitted by the thread that set it; other threads log as usual."""

    def __init__(self) -> None:
        super().__init__()
        self._state = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self._state, "muted", False)

    @contextmanager
    def active(self) -> Iterator[None]:
        previous = getattr(self._state, "muted", False)
        self._state.muted = True
        try:
            yield
        finally:
            self._state.muted = previous


_CORE_LOG_MUTE = _ThreadMute()
_INSTALL_LOCK = threading.Lock()


@contextmanager
def _core_log_muted() -> Iterator[None]:
    core_logger = logging.getLogger(Skillbook.__module__)
    with _INSTALL_LOCK:
        if _CORE_LOG_MUTE not in core_logger.filters:
            core_logger.addFilter(_CORE_LOG_MUTE)
    with _CORE_LOG_MUTE.active():
        yield
