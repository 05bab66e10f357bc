"""The skillbook: the agent's learned strategies, changed only through small delta operations."""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..counts import counted
from ..errors import (
    JsonNestingError,
    PinnedSkillError,
    SkillbookFormatError,
    SkillTooLongError,
    UnknownSkillError,
    UnknownTagError,
)
from .consolidation import (
    ConsolidationBatch,
    ConsolidationOp,
    ConsolidationReport,
    apply_consolidation_operations,
    check_consolidation,
)
from .files import special_file_kind, write_text_atomically
from .json_nesting import loads_bounded
from .lifecycle_rules import LifecycleAction, change_lifecycle
from .packed_skills import LayeredSkills, PackedSkills, attribute_columns, layer_changes
from .prompt_budget import PromptBudget, RelevanceScorer, select_within_budget, text_words
from .prompt_index import IndexColumns, IndexScorer, PromptIndex
from .reference_format import clean_provenance, from_reference_skill
from .skill import SKILL_STATUSES, TAGS, SimilarityDecision, Skill, normalise_content, utc_now
from .skill_ids import format_skill_id, is_skill_id
from .skill_limits import skill_limit_problem
from .skill_provenance import DEFAULT_KEEP, occurrence_of, record_occurrence
from .toon import encode_table, table_header
from .updates import UpdateBatch, UpdateOperation

__all__ = ["ApplyReport", "Skillbook"]

logger = logging.getLogger(__name__)

_ID_NUMBER = re.compile(r"-(\d+)$")
_PROVENANCE_KEYS = frozenset({"occurrences", "sources", "occurrence_totals"})
PROMPT_COLUMNS = ("id", "section", "content", "helpful", "harmful", "neutral")
# The fields skill_columns() reads: strings, numbers and flags, which a caller cannot change in place.
SCALAR_FIELDS = frozenset(
    {
        "id",
        "section",
        "content",
        "helpful",
        "harmful",
        "neutral",
        "justification",
        "evidence",
        "created_at",
        "updated_at",
        "status",
        "embedding_hash",
        "pinned",
    }
)


@dataclass
class ApplyReport:
    """What one apply_update did: ids touched, and operations skipped, with why."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    tagged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[tuple[int, str, str]] = field(default_factory=list)  # (index, type, skill_id)
    duplicates: list[tuple[int, str]] = field(default_factory=list)  # (index, id of the existing skill)
    # Indices of ADDs left out because the skillbook was at its size limit (a store's
    # ACE_MAX_SKILLBOOK_SKILLS); the in-process Skillbook has no limit.
    full: list[int] = field(default_factory=list)
    # REMOVEs left out because the skill is pinned: (index, skill id).
    pinned: list[tuple[int, str]] = field(default_factory=list)
    # ADDs and UPDATEs left out because a text is over core/skill_limits.py's: (index, type, why).
    too_long: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def skipped_ops(self) -> int:
        """Operations not applied: an unknown skill, a skill that exists, no room, pinned, too long."""
        return (
            len(self.skipped) + len(self.duplicates) + len(self.full) + len(self.pinned) + len(self.too_long)
        )


def _pair_key(id_a: str, id_b: str) -> frozenset[str]:
    return frozenset((id_a, id_b))


def _id_number(skill_id: str) -> int | None:
    match = _ID_NUMBER.search(skill_id)
    return int(match.group(1)) if match else None


class Skillbook:
    """Learned strategies grouped by section, safe to share between threads.

    Reads return copies, so nothing outside can change a skill behind the
    skillbook's back; every write takes one lock.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        # A dict; a snapshot's may be a read-only packed or layered mapping (core/packed_skills.py).
        self._skills: MutableMapping[str, Skill] = {}
        self._next_id = 1
        self._similarity: dict[frozenset[str], SimilarityDecision] = {}
        # Built by the first budgeted prompt; dropped by any write (a snapshot derives the next).
        self._index: PromptIndex | None = None
        # Occurrences each skill keeps (core/skill_provenance.py); a Redis store sets its ACE_PROVENANCE_KEEP.
        self.provenance_keep = DEFAULT_KEEP

    # -- reads ------------------------------------------------------------------
    def get_skill(self, skill_id: str) -> Skill | None:
        """A copy of the skill with this id (active or not), or None."""
        with self._lock:
            skill = self._skills.get(skill_id)
            return copy.deepcopy(skill) if skill is not None else None

    def skills(self, include_invalid: bool = False) -> list[Skill]:
        """Copies of the skills, in section order then insertion order."""
        with self._lock:
            return [copy.deepcopy(s) for s in self._ordered(include_invalid)]

    def skill_columns(self, names: Sequence[str]) -> dict[str, list[Any]]:
        """The named scalar fields of every skill (removed, archived too): a list each, in insertion order.

        A read of many skills that neither copies them (skills() copies each: a
        second at 100,000 skills) nor makes an object per skill (a tuple each
        would cost as much again in garbage collection). The values are
        immutable, so sharing them is safe. ValueError names a field that is not
        in SCALAR_FIELDS.
        """
        unknown = [name for name in names if name not in SCALAR_FIELDS]
        if unknown:
            raise ValueError(
                f"skill_columns reads scalar fields only ({sorted(SCALAR_FIELDS)}), got {unknown}"
            )
        with self._lock:
            if isinstance(self._skills, PackedSkills | LayeredSkills):  # a snapshot's: its encoded skills
                return self._skills.columns(names)
            return attribute_columns(self._skills, names)

    def sections(self) -> list[str]:
        """Sections that hold at least one active skill, in first-seen order."""
        with self._lock:
            return list(dict.fromkeys(s.section for s in self._skills.values() if s.is_active))

    def stats(self) -> dict[str, Any]:
        """Counts: sections, active, invalid (removed) and archived skills, and the sums of each tag."""
        with self._lock:
            if self._index is not None:  # kept per version: no pass over the skills
                return self._index.stats()
            active = [s for s in self._skills.values() if s.is_active]
            archived = sum(1 for s in self._skills.values() if s.is_archived)
            return {
                "sections": len({s.section for s in active}),
                "skills": len(active),
                "invalid": len(self._skills) - len(active) - archived,
                "archived": archived,
                "tags": {tag: sum(getattr(s, tag) for s in active) for tag in TAGS},
            }

    def __len__(self) -> int:
        with self._lock:
            if self._index is not None:
                return self._index.count
            return sum(1 for s in self._skills.values() if s.is_active)

    @property
    def next_id_number(self) -> int:
        """The number the next allocated skill id gets."""
        with self._lock:
            return self._next_id

    def __contains__(self, skill_id: object) -> bool:
        with self._lock:
            return skill_id in self._skills

    def _ordered(self, include_invalid: bool) -> Iterator[Skill]:
        by_section: dict[str, list[Skill]] = {}
        for skill in self._skills.values():
            if include_invalid or skill.is_active:
                by_section.setdefault(skill.section, []).append(skill)
        for skills in by_section.values():
            yield from skills

    # -- single writes -------------------------------------------------------------
    def add_skill(
        self,
        section: str,
        content: str,
        skill_id: str | None = None,
        *,
        justification: str = "",
        evidence: str = "",
        sources: list[dict[str, Any]] | None = None,
    ) -> Skill:
        """Add a skill and return a copy; a ``skill_id`` already taken is replaced by a fresh one.

        ``sources`` say where it came from: their keys make the skill's ADD occurrence.
        SkillTooLongError if the content or section is over core/skill_limits.py's limits.
        """
        _check_limits(content=content, section=section)
        origin = {key: value for source in sources or [] for key, value in source.items()}
        with self._lock:
            self._index = None
            skill = self._add(
                section, content, skill_id, justification, evidence, occurrence_of("ADD", origin)
            )
            return copy.deepcopy(skill)

    def update_skill(
        self, skill_id: str, content: str, *, justification: str = "", evidence: str = ""
    ) -> Skill:
        """Replace a skill's content; UnknownSkillError if there is no such skill, SkillTooLongError."""
        _check_limits(content=content)
        with self._lock:
            self._index = None
            skill = self._require(skill_id)
            record_occurrence(skill, occurrence_of("UPDATE", None), self.provenance_keep)
            return copy.deepcopy(self._update(skill, content, justification, evidence))

    def tag_skill(
        self, skill_id: str, tag: str, increment: int = 1, *, source: dict[str, Any] | None = None
    ) -> Skill:
        """Add ``increment`` to a skill's helpful, harmful or neutral counter; ``source``: where from."""
        if tag not in TAGS:
            raise UnknownTagError(skill_id, tag, TAGS)
        with self._lock:
            self._index = None
            skill = self._require(skill_id)
            record_occurrence(skill, occurrence_of("TAG", source), self.provenance_keep)
            return copy.deepcopy(self._tag(skill, tag, increment))

    def remove_skill(self, skill_id: str, *, soft: bool = False) -> None:
        """Delete a skill, or with ``soft=True`` mark it invalid and keep it for the record.

        PinnedSkillError for a pinned skill: unpin it first.
        """
        with self._lock:
            skill = self._require(skill_id)
            if skill.pinned:
                raise PinnedSkillError(skill_id, "removed")
            self._index = None
            self._remove(skill, soft)

    # -- lifecycle (core/lifecycle_rules.py) ------------------------------------------------------
    def pin_skill(self, skill_id: str, *, actor: str = "", reason: str = "") -> Skill:
        """Pin a skill: never removed, merged or archived until unpinned. Returns a copy."""
        return self._change_lifecycle(skill_id, LifecycleAction.PIN, actor, reason)

    def unpin_skill(self, skill_id: str, *, actor: str = "", reason: str = "") -> Skill:
        """Unpin a skill. Returns a copy."""
        return self._change_lifecycle(skill_id, LifecycleAction.UNPIN, actor, reason)

    def archive_skill(self, skill_id: str, *, actor: str = "", reason: str = "") -> Skill:
        """Archive a skill: out of the prompt and the count, kept; PinnedSkillError if pinned."""
        return self._change_lifecycle(skill_id, LifecycleAction.ARCHIVE, actor, reason)

    def restore_skill(self, skill_id: str, *, actor: str = "", reason: str = "") -> Skill:
        """Bring an archived skill back into the prompt. Returns a copy."""
        return self._change_lifecycle(skill_id, LifecycleAction.RESTORE, actor, reason)

    def _change_lifecycle(self, skill_id: str, action: LifecycleAction, actor: str, reason: str) -> Skill:
        with self._lock:
            skill = self._require(skill_id)
            if change_lifecycle(skill, action, actor=actor, reason=reason):
                self._index = None
            return copy.deepcopy(skill)

    def _same_content(self, section: str, content: str) -> Skill | None:
        wanted = (section.strip(), normalise_content(content))
        for skill in self._skills.values():
            if skill.is_active and (skill.section, normalise_content(skill.content)) == wanted:
                return skill
        return None

    def _require(self, skill_id: str) -> Skill:
        skill = self._skills.get(skill_id)
        if skill is None:
            raise UnknownSkillError(skill_id)
        return skill

    @staticmethod
    def _update(skill: Skill, content: str, justification: str, evidence: str) -> Skill:
        skill.content = content.strip()
        skill.justification = justification or skill.justification
        skill.evidence = evidence or skill.evidence
        skill.embedding = None  # the old embedding describes the old content
        skill.embedding_hash = None
        skill.updated_at = utc_now()
        return skill

    @staticmethod
    def _tag(skill: Skill, tag: str, increment: int) -> Skill:
        setattr(skill, tag, getattr(skill, tag) + increment)
        skill.updated_at = utc_now()
        return skill

    def _remove(self, skill: Skill, soft: bool) -> None:
        if soft:
            skill.status = "invalid"
            skill.updated_at = utc_now()
        else:
            del self._skills[skill.id]

    def _allocate_id(self, section: str) -> str:
        # Skip numbers taken by ids an LLM chose: a generated id never overwrites a skill.
        while (candidate := format_skill_id(section, self._next_id)) in self._skills:
            self._next_id += 1
        self._next_id += 1
        return candidate

    def _add(
        self,
        section: str,
        content: str,
        skill_id: str | None,
        justification: str,
        evidence: str,
        origin: dict[str, Any],
    ) -> Skill:
        if skill_id and skill_id in self._skills:
            logger.warning("ADD asked for skill id %r, which exists; allocating a fresh id", skill_id)
            skill_id = None
        elif skill_id and not is_skill_id(skill_id):
            # An id outside the scheme could never be cited back by the agent.
            logger.warning("ADD asked for skill id %r, which is not a valid id; allocating one", skill_id)
            skill_id = None
        if skill_id:
            number = _id_number(skill_id)
            if number is not None and number >= self._next_id:
                self._next_id = number + 1
        new_id = skill_id or self._allocate_id(section)
        skill = Skill(
            id=new_id,
            section=section.strip(),
            content=content.strip(),
            justification=justification,
            evidence=evidence,
        )
        record_occurrence(skill, origin, self.provenance_keep)
        self._skills[new_id] = skill
        return skill

    # -- batches ---------------------------------------------------------------------
    def apply_update(self, batch: UpdateBatch) -> ApplyReport:
        """Apply every operation of ``batch``, or none of them.

        The whole batch is validated first (InvalidUpdateError names the bad
        operation). Operations naming an unknown skill id are skipped, counted
        in the report and logged: LLMs do hallucinate ids. So is an ADD or UPDATE
        whose text is over core/skill_limits.py's limits: that operation, not the batch.
        """
        batch.validate_operations()
        report = ApplyReport()
        with self._lock:
            self._index = None
            for index, op in enumerate(batch.operations):
                self._apply_one(index, op, report)
        return report

    def _apply_one(self, index: int, op: UpdateOperation, report: ApplyReport) -> None:
        if op.type in ("ADD", "UPDATE"):
            too_long = skill_limit_problem(
                content=op.content.strip(), section=op.section.strip() if op.type == "ADD" else ""
            )
            if too_long is not None:
                logger.warning("skipping %s operation #%d: %s", op.type, index, too_long)
                report.too_long.append((index, op.type, too_long))
                return
        if op.type == "ADD":
            existing = self._same_content(op.section, op.content)
            if existing is not None:
                # Two SkillManager calls that saw the same snapshot propose the same skill.
                logger.info("skipping ADD operation #%d: skill %s already says it", index, existing.id)
                report.duplicates.append((index, existing.id))
                return
            origin = occurrence_of("ADD", op.insight_source)
            added = self._add(op.section, op.content, op.skill_id, op.justification, op.evidence, origin)
            report.added.append(added.id)
            return
        skill_id = op.skill_id or ""
        skill = self._skills.get(skill_id)
        if skill is None:
            logger.warning("skipping %s operation #%d: no skill with id %r", op.type, index, skill_id)
            report.skipped.append((index, op.type, skill_id))
            return
        if op.type == "REMOVE" and skill.pinned:
            logger.warning("skipping REMOVE operation #%d: skill %s is pinned", index, skill_id)
            report.pinned.append((index, skill_id))
            return
        record_occurrence(skill, occurrence_of(op.type, op.insight_source), self.provenance_keep)
        if op.type == "UPDATE":
            self._update(skill, op.content, op.justification, op.evidence)
            report.updated.append(skill_id)
        elif op.type == "TAG":
            for tag, count in op.metadata.items():
                self._tag(skill, tag, count)
            report.tagged.append(skill_id)
        else:  # REMOVE
            self._remove(skill, soft=False)
            report.removed.append(skill_id)

    def apply_consolidation(
        self, operations: ConsolidationBatch | Iterable[ConsolidationOp]
    ) -> ConsolidationReport:
        """Apply deduplication operations (merge, delete, keep, update), all of them or none.

        The whole batch is checked first: an operation naming an unknown or
        already-deleted skill raises InvalidConsolidationError (its index and
        the id) and nothing is applied. Only the named skills and the
        similarity decisions of named pairs change. This is the one write
        path of deduplication (a store-backed skillbook sends it to Redis).
        """
        if not isinstance(operations, ConsolidationBatch):
            operations = ConsolidationBatch(operations=list(operations))
        ops = operations.operations
        with self._lock:
            check_consolidation(ops, self._skills, operations.planned_contents)
            self._index = None
            return apply_consolidation_operations(
                ops, self._skills, self._record_decision, keep=self.provenance_keep
            )

    def set_embeddings(self, embeddings: Mapping[str, tuple[str, Sequence[float]]]) -> int:
        """Store ``{skill_id: (content_hash, vector)}`` on the skills; return how many were stored.

        Ids no longer present are ignored (the skill went away since the
        embedding was computed). This is a cache, not a content change:
        ``updated_at`` does not move.
        """
        stored = 0
        with self._lock:
            for skill_id, (content_hash, vector) in embeddings.items():
                skill = self._skills.get(skill_id)
                if skill is not None:
                    skill.embedding = [float(x) for x in vector]
                    skill.embedding_hash = content_hash
                    stored += 1
        return stored

    def with_changes(
        self,
        changes: Iterable[Mapping[str, dict[str, Any] | None]],
        *,
        next_id: int,
        order_of_new: Callable[[str], Any],
    ) -> Skillbook:
        """A new skillbook: this one with each mapping's skills replaced (None: removed), in turn.

        Unchanged skills are shared with this skillbook rather than copied, so
        neither may be changed afterwards: this builds read-only snapshots (the
        Redis store's) for the cost of the touched skills only. Skills already
        present keep their place; new ones go last, ordered by ``order_of_new``.
        ``next_id`` is the next id number to issue. Similarity decisions are kept.
        """
        with self._lock:
            base = self._skills
            similarity = self._similarity
            index = self._index
        final: dict[str, Skill | None] = {}  # each touched id's last image, in first-touched order
        added: list[str] = []
        for images in changes:
            for skill_id, image in images.items():
                if image is None:
                    final[skill_id] = None
                    continue
                present = final[skill_id] is not None if skill_id in final else skill_id in base
                if not present:
                    added.append(skill_id)
                final[skill_id] = Skill.from_dict(image)
        appended = sorted({i for i in added if final.get(i) is not None}, key=order_of_new)
        # The new version layers the touched skills over this one's, never copying every entry.
        skills: MutableMapping[str, Skill] = layer_changes(base, final, appended)
        book = Skillbook()
        book._skills = skills
        book._next_id = next_id
        book._similarity = similarity
        if index is not None:  # the prompt index follows for the changed skills' cost only
            moved = set(appended)
            book._index = index.derive(
                skills,
                changed=[i for i in final if i not in moved],
                appended=appended,
                columns=PROMPT_COLUMNS,
            )
        return book

    def compact_parts(self) -> tuple[PackedSkills, IndexColumns, int, dict[str, Any]]:
        """What core/compact_snapshot.py stores: packed skills, the prompt index's columns (same order),
        the next id number and the similarity decisions as the file format has them."""
        with self._lock:
            skills = PackedSkills.pack(self._skills)
            columns = self._prompt_index().columns()
            if columns["ids"] != skills.ids:  # an index always follows its skills; built anew if not
                columns = PromptIndex.build(self._skills, PROMPT_COLUMNS).columns()
            decisions = {",".join(sorted(pair)): d.to_dict() for pair, d in self._similarity.items()}
            return skills, columns, self._next_id, decisions

    @classmethod
    def from_compact_parts(
        cls,
        skills: PackedSkills,
        index: PromptIndex,
        next_id: int,
        decisions: dict[frozenset[str], SimilarityDecision],
    ) -> Skillbook:
        """A read-only snapshot over ``skills`` with its prompt ``index`` (of the same skills, same order)."""
        book = cls()
        book._skills = skills
        book._index = index
        book._next_id = next_id
        book._similarity = decisions
        return book

    # -- similarity decisions ---------------------------------------------------------
    def _record_decision(self, id_a: str, id_b: str, decision: SimilarityDecision) -> None:
        self._similarity[_pair_key(id_a, id_b)] = decision

    def set_similarity_decision(self, id_a: str, id_b: str, decision: SimilarityDecision) -> None:
        """Record a decision about a pair of skills (order of the ids does not matter)."""
        with self._lock:
            self._similarity[_pair_key(id_a, id_b)] = decision

    def get_similarity_decision(self, id_a: str, id_b: str) -> SimilarityDecision | None:
        """The decision recorded for the pair, if any."""
        with self._lock:
            return self._similarity.get(_pair_key(id_a, id_b))

    def has_keep_decision(self, id_a: str, id_b: str) -> bool:
        """True if the pair was judged distinct (KEEP) and should not be flagged again."""
        decision = self.get_similarity_decision(id_a, id_b)
        return decision is not None and decision.decision.upper() == "KEEP"

    def keep_pairs(self) -> list[tuple[str, str]]:
        """Every pair judged distinct (KEEP), each once, in no set order."""
        with self._lock:
            return [
                (min(pair), max(pair))
                for pair, decision in self._similarity.items()
                if len(pair) == 2 and decision.decision.upper() == "KEEP"
            ]

    # -- serialisation -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The reference file format: skills, sections, next_id, similarity_decisions."""
        with self._lock:
            sections: dict[str, list[str]] = {}
            for skill in self._skills.values():
                sections.setdefault(skill.section, []).append(skill.id)
            return {
                "skills": {skill_id: s.to_dict() for skill_id, s in self._skills.items()},
                "sections": sections,
                # The reference framework stores the last number issued, not the next one.
                "next_id": self._next_id - 1,
                "similarity_decisions": {
                    ",".join(sorted(pair)): d.to_dict() for pair, d in self._similarity.items()
                },
            }

    @classmethod
    def from_dict(cls, data: Any, source: str = "skillbook") -> Skillbook:
        """Build a skillbook from the file format; SkillbookFormatError names what is wrong."""
        if not isinstance(data, dict):
            raise SkillbookFormatError(source, f"expected a JSON object, got {type(data).__name__}")
        raw_skills = data.get("skills", {})
        if not isinstance(raw_skills, dict):
            raise SkillbookFormatError(source, f"'skills' must be an object, got {type(raw_skills).__name__}")
        book = cls()
        for key, raw in raw_skills.items():
            book._skills[key] = _skill_from_file(raw, key, source)
        numbers = [n for n in map(_id_number, book._skills) if n is not None]
        last_issued = data.get("next_id", 0)
        if isinstance(last_issued, bool) or not isinstance(last_issued, int):
            raise SkillbookFormatError(source, f"'next_id' must be an integer, got {last_issued!r}")
        # Never reissue a number: not the last one issued, nor any a loaded skill holds.
        book._next_id = max([last_issued + 1, *(n + 1 for n in numbers)])
        decisions = data.get("similarity_decisions") or {}
        if not isinstance(decisions, dict):
            raise SkillbookFormatError(source, "'similarity_decisions' must be an object")
        for pair, raw_decision in decisions.items():
            ids = re.split(r"[,|]", pair)
            if len(ids) != 2 or not isinstance(raw_decision, dict):
                raise SkillbookFormatError(source, f"similarity decision {pair!r} is malformed")
            book._similarity[_pair_key(*ids)] = SimilarityDecision.from_dict(raw_decision)
        return book

    def replace_with(self, other: Skillbook) -> None:
        """Take ``other``'s skills, id counter and similarity decisions in place of this one's.

        Everything holding this skillbook (a runner's steps) sees the new
        contents at once: this is how a runner loads a saved skillbook. The
        skills are taken, not copied, so ``other`` must not be used afterwards.
        """
        with other._lock:
            skills, next_id, similarity = dict(other._skills), other._next_id, dict(other._similarity)
        with self._lock:
            self._skills, self._next_id, self._similarity = skills, next_id, similarity
            self._index = None  # provenance_keep stays this skillbook's

    def dumps(self) -> str:
        """The skillbook as a JSON string."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)

    @classmethod
    def loads(cls, text: str, source: str = "skillbook") -> Skillbook:
        """Parse a skillbook document from outside (a file, a request).

        SkillbookFormatError with line and column if it is not JSON, if it nests
        too deeply, or naming a skill over core/skill_limits.py's limits.
        """
        try:
            data = loads_bounded(text)
        except JsonNestingError as exc:
            raise SkillbookFormatError(source, str(exc)) from exc
        except json.JSONDecodeError as exc:
            raise SkillbookFormatError(
                source, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from exc
        book = cls.from_dict(data, source)
        book.check_limits(source)
        return book

    def check_limits(self, source: str) -> None:
        """SkillbookFormatError naming the first skill over core/skill_limits.py's limits, if any.

        For a skillbook about to be written whole (an import); skills read back from a
        store are not checked, so one stored before the limits stays readable.
        """
        with self._lock:
            for key, skill in self._skills.items():
                problem = skill_limit_problem(content=skill.content, section=skill.section, skill_id=key)
                if problem is not None:
                    raise SkillbookFormatError(source, f"skill {_shown_id(key)}: {problem}")

    def save_to_file(self, path: str | os.PathLike[str]) -> None:
        """Write the skillbook as JSON atomically: a crash never leaves a half-written file."""
        write_text_atomically(Path(path), self.dumps())

    @classmethod
    def load_from_file(cls, path: str | os.PathLike[str]) -> Skillbook:
        """Read a skillbook file written by ace-workers or the reference framework."""
        target = Path(path)
        kind = special_file_kind(target)
        if kind is not None:  # reading a FIFO would block until a writer came, a device never end
            raise SkillbookFormatError(str(target), f"{kind}, not a regular file; refused")
        try:
            text = target.read_text(encoding="utf-8")
        except OSError as exc:
            raise SkillbookFormatError(str(target), f"cannot read: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise SkillbookFormatError(str(target), f"not UTF-8 text at byte {exc.start}") from exc
        return cls.loads(text, source=str(target))

    # -- presentation --------------------------------------------------------------------
    def as_prompt(
        self,
        budget: PromptBudget | None = None,
        query: str = "",
        scorer: RelevanceScorer | None = None,
    ) -> str:
        """The active skills as a tab-delimited TOON table, the compact form LLM prompts use.

        With a ``budget`` the table is cut to fit: the skills most relevant to
        ``query`` by ``scorer`` (default: shared words) are kept, ties going to
        more helpful-minus-harmful votes, and a last line says how many were
        left out. Within the budget the table is exactly the unbudgeted one.
        """
        # A scorer of its own takes the index path if it can score an index's slots.
        index_scores: IndexScorer | None = getattr(scorer, "index_scores", None)
        if budget is None or (scorer is not None and index_scores is None):
            return self._scanned_prompt(budget, query, scorer)
        index = self._prompt_index()
        if index.count == 0:
            return "(no skills yet)"
        whole = len(table_header("skills", PROMPT_COLUMNS, index.count)) + index.total_chars
        if budget.fits(index.count, whole):
            return _render_rows(index, index.all_slots())
        scores = index_scores(query, index, self._skills) if index_scores is not None and query else None
        chosen = index.select(query, budget, _fixed_chars(index.count), scores)
        return f"{_render_rows(index, chosen)}\n{_omitted_note(index.count - len(chosen), len(chosen))}"

    def most_relevant(
        self,
        query: str,
        k: int,
        scorer: RelevanceScorer | None = None,
        *,
        exclude: Container[str] = frozenset(),
    ) -> list[Skill]:
        """Copies of up to ``k`` active skills most relevant to ``query``, best first, none in ``exclude``.

        Found on the prompt index, never by a pass over the skills. With the default
        (lexical) scorer only the skills holding a distinctive query word are scored
        (the words' postings, weighted as the budgeted table weighs them; ties to more
        helpful minus harmful votes, then the older): a lookup costs what the query's
        words hold, not the skillbook's size. A scorer of its own that scores the
        index (embeddings) ranks its ``2k`` best instead. A skill sharing nothing
        with the query (no word; a score of 0 or less) is never returned.
        """
        if k < 1 or not query.strip():
            return []
        index_scores: IndexScorer | None = getattr(scorer, "index_scores", None)
        index = self._prompt_index()
        if index.count == 0:
            return []
        if index_scores is None:
            ranked = _lexical_best(index, query, k, exclude)
        else:
            scores = index_scores(query, index, self._skills)
            wanted = PromptBudget(max_skills=2 * k, max_chars=None)
            chosen = [s for s in index.select(query, wanted, 0, scores) if index.ids[s] not in exclude]
            ranked = sorted((s for s in chosen if scores[s] > 0), key=lambda s: -float(scores[s]))[:k]
        with self._lock:
            return [copy.deepcopy(self._skills[skill_id]) for slot in ranked if (skill_id := index.ids[slot])]

    def _prompt_index(self) -> PromptIndex:
        """The prompt index of this version, built on first use."""
        with self._lock:
            if self._index is None:
                self._index = PromptIndex.build(self._skills, PROMPT_COLUMNS)
            return self._index

    def _scanned_prompt(self, budget: PromptBudget | None, query: str, scorer: RelevanceScorer | None) -> str:
        """as_prompt by encoding and scoring every skill: no budget, or a scorer of its own."""
        with self._lock:
            skills = [copy.copy(s) for s in self._ordered(False)]
        if not skills:
            return "(no skills yet)"
        rows = [[getattr(s, column) for column in PROMPT_COLUMNS] for s in skills]
        table = encode_table("skills", PROMPT_COLUMNS, rows)
        if budget is None or budget.fits(len(rows), len(table)):
            return table
        lines = table.split("\n")[1:]  # cells are escaped, so one line per row
        chosen = select_within_budget(
            skills, [len(line) + 1 for line in lines], budget, _fixed_chars(len(rows)), query, scorer
        )
        kept = encode_table("skills", PROMPT_COLUMNS, [rows[i] for i in chosen])
        return f"{kept}\n{_omitted_note(len(rows) - len(chosen), len(chosen))}"

    def as_markdown(self) -> str:
        """The active skills as markdown, grouped by section, for people."""
        with self._lock:
            skills = list(self._ordered(False))
        lines = [f"# Skillbook ({counted(len(skills), 'skill')})"]
        section = None
        for skill in skills:
            if skill.section != section:
                section = skill.section
                lines += ["", f"## {section}"]
            counts = f"helpful {skill.helpful}, harmful {skill.harmful}, neutral {skill.neutral}"
            lines.append(f"- [{skill.id}] {skill.content} ({counts})")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.as_markdown()

    def __repr__(self) -> str:
        return f"Skillbook({len(self)} skills)"


def _fixed_chars(count: int) -> int:
    """What a cut table of ``count`` skills costs besides its rows, sized for the largest counts."""
    return (
        len(table_header("skills", PROMPT_COLUMNS, 0))
        + len(str(count))
        + len(_omitted_note(count, count))
        + 1
    )


def _lexical_best(index: PromptIndex, query: str, k: int, exclude: Container[str]) -> list[int]:
    """Slots of the ``k`` best skills for ``query`` by shared words, from its words' postings.

    The candidates are the skills holding one of the query's distinctive words (a posting
    of at most 1/32 of the skills): a word most skills hold (``check``, ``always``) still
    adds its weight to them, read through a mask, but does not make every skill a
    candidate. With no distinctive word, every skill holding a query word is one.
    """
    held = [index.postings[w] for w in sorted(text_words(query)) if w in index.postings]
    held = [slots for slots in held if len(slots)]
    if not held:
        return []
    weighted = [(slots, math.log(1 + index.count / len(slots))) for slots in held]
    limit = max(64, index.count // 32)  # a longer posting is a common word's
    distinctive = [(slots, weight) for slots, weight in weighted if len(slots) <= limit] or weighted
    # Each candidate scores the weights of the query words it holds, as the budgeted table scores it,
    # added in the same order; on the candidates only: a pass over every slot cost 0.3 ms at 100,000.
    candidates = np.unique(np.concatenate([slots for slots, _ in distinctive]))
    scores = np.zeros(len(candidates))
    for slots, weight in distinctive:
        scores[np.searchsorted(candidates, slots)] += weight  # a posting names each slot once
    if len(distinctive) < len(weighted):
        for slots, weight in weighted:
            if len(slots) > limit:
                holds = np.zeros(len(index.ids), dtype=bool)
                holds[slots] = True
                scores += holds[candidates] * weight
    votes = index.helpful[candidates] - index.harmful[candidates]
    best = []
    for position in np.lexsort((candidates, -votes, -scores)).tolist():
        slot = int(candidates[position])
        if index.ids[slot] not in exclude:
            best.append(slot)
            if len(best) == k:
                break
    return best


def _render_rows(index: PromptIndex, slots: list[int]) -> str:
    """The skills table of the skills at ``slots`` (in that order), from the index's rows."""
    return "\n".join([table_header("skills", PROMPT_COLUMNS, len(slots)), *(index.lines[s] for s in slots)])


def _omitted_note(omitted: int, shown: int) -> str:
    return f"({omitted} more skills not shown: these {shown} are the most relevant to the task)"


def _check_limits(*, content: str, section: str = "") -> None:
    problem = skill_limit_problem(content=content.strip(), section=section.strip())
    if problem is not None:
        raise SkillTooLongError(f"the skill is refused: {problem}")


def _shown_id(key: str) -> str:
    """A skill id from a file for an error line: quoted, and cut short if it is absurdly long."""
    return repr(key) if len(key) <= 80 else f"{key[:60]!r}... ({len(key)} characters)"


def _skill_from_file(raw: Any, key: str, source: str) -> Skill:
    if not isinstance(raw, dict):
        raise SkillbookFormatError(source, f"skill {key!r} must be an object, got {type(raw).__name__}")
    raw = from_reference_skill(raw)
    # A skill read without provenance (a worker's snapshot) has nothing to clean.
    if not _PROVENANCE_KEYS.isdisjoint(raw):
        raw = clean_provenance(raw, key, source)
    for name in ("section", "content"):
        if not isinstance(raw.get(name), str):
            raise SkillbookFormatError(source, f"skill {key!r} has no string {name!r}")
    skill = Skill.from_dict({**raw, "id": raw.get("id") or key})
    if skill.id != key:
        raise SkillbookFormatError(source, f"skill stored under {key!r} has id {skill.id!r}")
    if skill.status not in SKILL_STATUSES:
        raise SkillbookFormatError(source, f"skill {key!r} has unknown status {skill.status!r}")
    if not isinstance(skill.pinned, bool):
        raise SkillbookFormatError(source, f"skill {key!r} has 'pinned' {skill.pinned!r}, not true or false")
    if skill.archive_info is not None and not isinstance(skill.archive_info, dict):
        raise SkillbookFormatError(source, f"skill {key!r} has an 'archive_info' that is not an object")
    return skill
