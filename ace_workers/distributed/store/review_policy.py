"""A skillbook's review policy: which learned changes apply at once and which wait for a reviewer.

Stored as JSON under ``SkillbookKeys.review_policy``; absent means ``auto``
(today's behaviour: every update applies at once). ``review`` makes every
SkillManager and dedup update a proposal. In between, each kind of operation
(ADD, UPDATE, TAG, REMOVE, and dedup's CONSOLIDATE) is ``auto`` or ``review``
on its own, and ``auto_approve_after`` N lets N pending proposals that carry
the same operations apply them without a person (actor ``auto-approve``).
``duplicates`` ``reject`` rejects at once (actor ``auto-reject``) a proposal whose
every operation is an ADD restating an active skill: approving it would change nothing.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...core.skill import normalise_content
from ...core.updates import UpdateBatch, UpdateOperation
from ...errors import one_line
from .errors import CorruptDataError
from .review_names import CONSOLIDATE, DUPLICATE_MODES, POLICY_SUBJECTS, DuplicateMode

__all__ = [
    "AUTO",
    "CONSOLIDATE",
    "DUPLICATE_MODES",
    "POLICY_SUBJECTS",
    "REVIEW",
    "ReviewPolicy",
    "decode_policy",
    "operation_signature",
    "parse_policy",
    "reviews_any",
    "split_batch",
]

AUTO: Literal["auto"] = "auto"
REVIEW: Literal["review"] = "review"
Mode = Literal["auto", "review"]


class ReviewPolicy(BaseModel):
    """Per kind of operation, ``auto`` (apply at once) or ``review`` (a proposal); and auto-approval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ADD: Mode = AUTO
    UPDATE: Mode = AUTO
    TAG: Mode = AUTO
    REMOVE: Mode = AUTO
    CONSOLIDATE: Mode = AUTO
    auto_approve_after: int | None = Field(
        default=None,
        ge=2,
        description="Apply a proposal once this many writes proposed the same operations.",
    )
    duplicates: DuplicateMode = Field(
        default="review",
        description="reject: a proposal that only restates active skills is rejected at once.",
    )

    @classmethod
    def everything(
        cls, mode: Mode, auto_approve_after: int | None = None, duplicates: DuplicateMode = "review"
    ) -> ReviewPolicy:
        """The policy with every kind of operation set to ``mode``."""
        return cls(
            **dict.fromkeys(POLICY_SUBJECTS, mode),
            auto_approve_after=auto_approve_after,
            duplicates=duplicates,
        )

    def mode_of(self, subject: str) -> Mode:
        """``auto`` or ``review`` for an operation type or CONSOLIDATE."""
        mode: Mode = getattr(self, subject)
        return mode

    @property
    def reviews_anything(self) -> bool:
        """False for the all-auto policy: learning writes as it always did."""
        return any(self.mode_of(subject) == REVIEW for subject in POLICY_SUBJECTS)

    def describe(self) -> str:
        """One line: ``auto``, ``review``, or the rules (``ADD=review,TAG=auto,...``)."""
        modes = {self.mode_of(subject) for subject in POLICY_SUBJECTS}
        text = (
            modes.pop()
            if len(modes) == 1
            else ",".join(f"{subject}={self.mode_of(subject)}" for subject in POLICY_SUBJECTS)
        )
        if self.auto_approve_after is not None:
            text += f" (auto-approve after {self.auto_approve_after} writes propose the same)"
        if self.duplicates == "reject":
            text += " (duplicates of active skills rejected)"
        return text

    def to_json(self) -> str:
        """The policy as stored in Redis."""
        return self.model_dump_json()


def decode_policy(raw: bytes | str | None, key: str) -> ReviewPolicy:
    """The policy stored under ``key`` (None: absent, the auto policy); CorruptDataError naming the key."""
    if raw is None:
        return ReviewPolicy()
    try:
        return ReviewPolicy.model_validate_json(raw)
    except ValidationError as exc:
        raise CorruptDataError(key, f"holds no review policy ({one_line(exc)[:200]})") from None


def parse_policy(
    text: str, auto_approve_after: int | None = None, duplicates: DuplicateMode = "review"
) -> ReviewPolicy:
    """A policy from ``auto``, ``review``, or rules such as ``TAG=auto,ADD=review`` (the rest: auto).

    Raises ValueError naming the part that is not understood.
    """
    spec = text.strip()
    if spec.lower() in (AUTO, REVIEW):
        mode: Mode = AUTO if spec.lower() == AUTO else REVIEW
        return ReviewPolicy.everything(mode, auto_approve_after, duplicates)
    rules: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        subject, sep, value = (piece.strip() for piece in part.partition("="))
        if not sep or subject.upper() not in POLICY_SUBJECTS or value.lower() not in (AUTO, REVIEW):
            raise ValueError(
                f"review policy rule {part!r} is not OPERATION=MODE with OPERATION one of "
                f"{', '.join(POLICY_SUBJECTS)} and MODE auto or review (or give just auto or review)"
            )
        rules[subject.upper()] = value.lower()
    if not rules:
        raise ValueError("empty review policy: give auto, review, or rules such as TAG=auto,ADD=review")
    try:
        return ReviewPolicy(**rules, auto_approve_after=auto_approve_after, duplicates=duplicates)
    except ValidationError as exc:
        raise ValueError(f"review policy: {one_line(exc)}") from None


def split_batch(policy: ReviewPolicy, batch: UpdateBatch) -> tuple[UpdateBatch, UpdateBatch]:
    """``batch`` as (the operations that apply at once, those that become a proposal), order kept.

    Both halves keep the SkillManager's reasoning. An operation of the reviewed half that a
    later auto operation depends on (an ADD with a chosen id, tagged in the same batch) leaves
    that operation naming an unknown skill: it is skipped and counted, as apply skips any.
    """
    auto = [op for op in batch.operations if policy.mode_of(op.type) == AUTO]
    reviewed = [op for op in batch.operations if policy.mode_of(op.type) == REVIEW]
    return (
        batch.model_copy(update={"operations": auto}),
        batch.model_copy(update={"operations": reviewed}),
    )


def reviews_any(policy: ReviewPolicy, batch: UpdateBatch) -> bool:
    """True if ``policy`` makes an operation of ``batch`` a proposal (split it before applying)."""
    return policy.reviews_anything and any(policy.mode_of(op.type) == REVIEW for op in batch.operations)


def operation_signature(op: UpdateOperation) -> str:
    """What makes two operations "the same" for auto-approval: type, skill id, section, content, counts."""
    return json.dumps(
        [
            op.type,
            op.skill_id or "",
            op.section.strip() if op.type == "ADD" else "",
            normalise_content(op.content),
            sorted(op.metadata.items()) if op.type == "TAG" else [],
        ]
    )
