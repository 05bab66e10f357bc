"""Promotion of a label's version to another label, gated by an offline evaluation.

The rule (``if_better``): the candidate's version and the target label's current
version answer the same tasks (:mod:`.evaluation`), and the target is moved to the
candidate's version only when

    accuracy(candidate) - accuracy(target) > margin

strictly: a tie, or a gain of exactly ``margin``, is refused; with the default margin
0 the candidate must be better by at least one task. When the target label does not
exist yet the candidate is promoted (after being evaluated alone, so the move carries
its evaluation). The move is a compare-and-set on the target's version as it was when
the evaluation began, so a label moved meanwhile is never overwritten unseen
(LabelMovedError). Every evaluation, refused ones too, is recorded in the
skillbook's evaluations list with its decision; a move carries it in the label log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ...counts import counted
from ...protocols import AgentLike
from ...redaction.redactor import Redactor
from ..store.errors import LabelMovedError
from ..store.labels import LabelMove, validate_label
from ..store.store import RedisSkillbookStore
from .evaluation import EvaluationReport, EvaluationTarget, OnProgress, TaskSet, evaluate_versions

__all__ = ["PROMOTION_RULE", "PromotionDecision", "PromotionResult", "is_better", "promote_label"]

logger = logging.getLogger(__name__)

PROMOTION_RULE = (
    "promoted only when accuracy(candidate) - accuracy(target) > margin on the same tasks "
    "(strictly: a tie is refused); a target label not set yet takes the candidate"
)


class PromotionDecision(str, Enum):
    """What a promotion did."""

    PROMOTED = "promoted"  # the target label now points at the candidate's version
    REFUSED = "refused"  # the evaluation said the candidate is not better by the margin
    UNCHANGED = "unchanged"  # the target already points at the candidate's version
    CONFLICT = "conflict"  # the target label moved while the evaluation ran; nothing was moved


@dataclass(frozen=True)
class PromotionResult:
    """The decision, the versions it was about, why, and the move and evaluation behind it."""

    decision: PromotionDecision
    skillbook: str
    candidate: str
    target: str
    candidate_version: int
    target_version: int | None  # where the target pointed before (None: not set)
    reason: str
    margin: float = 0.0
    move: LabelMove | None = None
    evaluation: EvaluationReport | None = None

    @property
    def promoted(self) -> bool:
        """True when the target label was moved."""
        return self.decision is PromotionDecision.PROMOTED

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON object."""
        return {
            "decision": self.decision.value,
            "skillbook": self.skillbook,
            "candidate": {"label": self.candidate, "version": self.candidate_version},
            "target": {"label": self.target, "version": self.target_version},
            "margin": self.margin,
            "reason": self.reason,
            "move": self.move.to_dict() if self.move is not None else None,
            "evaluation": self.evaluation.to_dict() if self.evaluation is not None else None,
        }


def is_better(candidate: float, target: float, total: int, margin: float) -> bool:
    """True when ``candidate`` beats ``target`` (summed scores over ``total`` tasks) by more than ``margin``.

    The difference is one division of the score difference, so a gain exactly equal to
    the margin (1 task in 20 against 0.05) compares equal, and is refused.
    """
    return total > 0 and (candidate - target) / total > margin


def promote_label(
    store: RedisSkillbookStore,
    candidate: str,
    target: str,
    *,
    actor: str,
    note: str = "",
    if_better: bool = False,
    tasks: TaskSet | None = None,
    agent: AgentLike | None = None,
    redactor: Redactor | None = None,
    margin: float = 0.0,
    model: str = "",
    progress: OnProgress | None = None,
    threads: int = 1,
) -> PromotionResult:
    """Point label ``target`` at the version ``candidate`` points at; with ``if_better``, only if better.

    Without ``if_better`` the move is unconditional (and logged). With it, ``tasks``,
    ``agent`` and ``redactor`` (as evaluate_versions takes them) are needed and the
    module's rule decides (PROMOTION_RULE). Raises UnknownLabelError for a candidate
    label that does not exist, LabelMovedError when the target moved during the
    evaluation (recorded as a conflict), ValueError for a margin outside [0, 1) or
    ``if_better`` without tasks, agent or redactor.
    """
    validate_label(candidate)
    validate_label(target)
    if candidate == target:
        raise ValueError(f"the candidate and the target are both label {target!r}: name two labels")
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be at least 0 and below 1 (a share of the tasks), got {margin}")
    candidate_version = store.labels.require(candidate)
    target_version = store.labels.get(target)

    def result(decision: PromotionDecision, reason: str, **extra: Any) -> PromotionResult:
        return PromotionResult(
            decision,
            store.name,
            candidate,
            target,
            candidate_version,
            target_version,
            reason,
            margin,
            **extra,
        )

    if target_version == candidate_version:
        return result(
            PromotionDecision.UNCHANGED, f"{target!r} already points at version {candidate_version}"
        )
    if not if_better:
        move = store.labels.set(target, candidate_version, actor=actor, note=note)
        return result(PromotionDecision.PROMOTED, "moved without an evaluation (not --if-better)", move=move)
    if tasks is None or agent is None or redactor is None:
        raise ValueError(
            "promoting only if better needs the tasks to evaluate on, the agent to run "
            "and the redactor of the skillbook's tenant"
        )
    targets = [EvaluationTarget(candidate_version, candidate)]
    if target_version is not None:
        targets.append(EvaluationTarget(target_version, target))
    report = evaluate_versions(
        store,
        targets,
        tasks,
        agent,
        actor=actor,
        redactor=redactor,
        model=model,
        progress=progress,
        threads=threads,
        record=False,
    )
    decision, reason = _decide(report, candidate, target, target_version, margin)
    report.promotion = {
        "candidate": candidate,
        "target": target,
        "candidate_version": candidate_version,
        "target_version": target_version,
        "margin": margin,
        "rule": PROMOTION_RULE,
        "decision": decision.value,
        "reason": reason,
    }
    if decision is PromotionDecision.REFUSED:
        store.evaluations.record(report.to_dict())
        logger.info("skillbook %r: promotion of %r to %r refused: %s", store.name, candidate, target, reason)
        return result(decision, reason, evaluation=report)
    try:
        move = store.labels.set(
            target,
            candidate_version,
            actor=actor,
            note=note,
            evaluation=report.to_dict(),
            expect=target_version,
        )
    except LabelMovedError as exc:
        report.promotion.update(decision=PromotionDecision.CONFLICT.value, reason=str(exc))
        store.evaluations.record(report.to_dict())
        raise
    store.evaluations.record(report.to_dict())
    return result(decision, reason, move=move, evaluation=report)


def _decide(
    report: EvaluationReport, candidate: str, target: str, target_version: int | None, margin: float
) -> tuple[PromotionDecision, str]:
    ours = report.score_of(candidate)
    if target_version is None:
        return (
            PromotionDecision.PROMOTED,
            f"label {target!r} was not set: it takes the candidate (accuracy {ours.accuracy:.1%})",
        )
    theirs = report.score_of(target)
    said = (
        f"candidate {candidate!r} (version {ours.version}) {ours.accuracy:.1%} against "
        f"{target!r} (version {theirs.version}) {theirs.accuracy:.1%} on {counted(ours.total, 'task')}"
    )
    if is_better(ours.score, theirs.score, ours.total, margin):
        return PromotionDecision.PROMOTED, f"{said}: better by more than the margin {margin:g}"
    return PromotionDecision.REFUSED, f"{said}: not better by more than the margin {margin:g}"
