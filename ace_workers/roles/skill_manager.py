"""The SkillManager role: turns a reflection into skillbook delta operations."""

from __future__ import annotations

import json
import logging
from typing import Any

from ..core.outputs import ReflectorOutput, SkillManagerOutput
from ..core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget, RelevanceScorer
from ..core.skill import normalise_content
from ..core.skill_lookup import (
    LOOKUP_OFF,
    LOOKUP_SIMILAR,
    LOOKUP_TOOLS,
    AdditionsInFlight,
    PendingOperation,
    PendingSource,
    SkillLookup,
)
from ..core.updates import UpdateBatch
from ..counts import counted
from ..protocols import LLMClientLike, SkillbookLike
from ..providers.call_gate import usage_and_cost
from .base import LLMRole
from .helpers import current_date, format_optional
from .lookup_section import being_added_section, lookup_section, related_pending, similar_skills
from .prompts import SKILL_MANAGER_PROMPT
from .skill_manager_tools import SkillManagerTurn, ToolSession

__all__ = ["SkillManager"]

logger = logging.getLogger(__name__)


class SkillManager(LLMRole):
    """Decides which skills to add, update, tag or remove after a reflection.

    It only proposes an :class:`~ace_workers.core.UpdateBatch`; applying it (and
    deduplication) are separate steps. Satisfies
    :class:`~ace_workers.protocols.SkillManagerLike`; LLM errors propagate.

    A skillbook over ``prompt_budget`` (None: no limit) is cut to the skills
    most relevant to the reflection's learnings, by ``relevance`` (default:
    shared words). ``lookup`` (core/skill_lookup.py) decides how it looks for
    the skills a learning restates beyond that cut: ``similar`` puts the ``k``
    most similar, and the related operations of ``pending`` (the skillbook's
    proposals waiting for review), into the prompt; ``tools`` lets the model
    search and read skills in up to ``max_calls`` tool calls; ``off`` does neither.

    With a lookup on, ``in_flight`` (on a fleet: the skillbook's stream of ADDs other
    learn slots are about to make) is told this decision's ADDs. If a decision announced
    earlier is adding something like them, the model decides once more, shown those ADDs.
    """

    def __init__(
        self,
        llm: LLMClientLike,
        prompt_template: str = SKILL_MANAGER_PROMPT,
        *,
        max_retries: int = 3,
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
        relevance: RelevanceScorer | None = None,
        lookup: SkillLookup | None = None,
        pending: PendingSource | None = None,
        in_flight: AdditionsInFlight | None = None,
    ) -> None:
        super().__init__(
            llm, prompt_template, max_retries=max_retries, prompt_budget=prompt_budget, relevance=relevance
        )
        self.lookup = lookup or SkillLookup()
        self.pending = pending
        self.in_flight = in_flight

    def build_prompt(
        self,
        reflection: ReflectorOutput,
        skillbook: SkillbookLike,
        question_context: str = "",
        progress: str = "",
    ) -> str:
        """The prompt :meth:`update_skills` sends (with tools: its first turn's), for inspection and logs."""
        inputs = self._inputs(reflection, skillbook, question_context, progress)
        if self.lookup.mode == LOOKUP_TOOLS:
            return self._tool_session(skillbook).prompt(inputs)
        return self.prompt_template.format(**inputs)

    def _inputs(
        self, reflection: ReflectorOutput, skillbook: SkillbookLike, question_context: str, progress: str
    ) -> dict[str, str]:
        """The values of the prompt's input sections."""
        table = self._skillbook_prompt(skillbook, _reflection_query(reflection, question_context))
        lookup = ""
        learnings = [item.learning for item in reflection.extracted_learnings if item.learning.strip()]
        if self.lookup.mode == LOOKUP_SIMILAR and learnings:
            k = self.lookup.k
            skills = similar_skills(skillbook, learnings, k, self.relevance, table=table)
            pending = related_pending(self.pending(), learnings, k) if self.pending is not None else []
            lookup = lookup_section(skills, pending)
        return {
            "current_date": current_date(),
            "progress": format_optional(progress),
            "question_context": format_optional(question_context),
            "stats": json.dumps(skillbook.stats(), ensure_ascii=False),
            "skillbook": table,
            "lookup": lookup,
            # ``raw`` is excluded by the model: provider metadata is no input.
            # TagStep applies the reflection's skill_tags; showing them here would count them twice.
            "reflection": reflection.model_dump_json(exclude={"skill_tags"}),
        }

    def update_skills(
        self,
        reflection: ReflectorOutput,
        skillbook: SkillbookLike,
        question_context: str = "",
        progress: str = "",
        **kwargs: Any,
    ) -> SkillManagerOutput:
        """Ask the LLM for the update batch; ``progress`` reads like "Epoch 1/3, sample 4/30".

        Extra keyword arguments go to ``llm.complete_structured``.
        """
        inputs = self._inputs(reflection, skillbook, question_context, progress)
        if self.lookup.mode == LOOKUP_TOOLS:
            output = self._update_with_tools(inputs, skillbook, kwargs)
        else:
            output = self._ask(self.prompt_template.format(**inputs), SkillManagerOutput, kwargs)
        output = self._settle_additions(output, inputs, kwargs)
        logger.debug("skill manager proposed %s", counted(len(output.update.operations), "operation"))
        return output

    def _tool_session(self, skillbook: SkillbookLike) -> ToolSession:
        pending = self.pending() if self.pending is not None else ()
        return ToolSession(
            skillbook, self.lookup.max_calls, self.lookup.k, scorer=self.relevance, pending=pending
        )

    def _update_with_tools(
        self, inputs: dict[str, str], skillbook: SkillbookLike, kwargs: dict[str, Any]
    ) -> SkillManagerOutput:
        """Turns until the model answers: each turn's tool calls run while calls are left.

        Every turn but the last runs at least one call, so there are at most
        ``max_calls + 1`` turns. A turn asking for calls when none are left ends
        the decision with no operations.
        """
        session = self._tool_session(skillbook)
        turns: list[SkillManagerTurn] = []
        while True:
            turn = self._ask(session.prompt(inputs), SkillManagerTurn, kwargs)
            turns.append(turn)
            if turn.update is not None or not turn.tool_calls:
                break
            if session.calls_left <= 0:
                logger.warning("skill manager asked for tools after its %d calls: no update", session.calls)
                break
            session.run(turn.tool_calls)
        update = turn.update or UpdateBatch(reasoning="No operations: the turns ended without an update.")
        raw: dict[str, Any] = {**_summed_usage(*turns), "turns": len(turns), "tool_calls": session.calls}
        return SkillManagerOutput(update=update, raw=raw)

    def _settle_additions(
        self, output: SkillManagerOutput, inputs: dict[str, str], kwargs: dict[str, Any]
    ) -> SkillManagerOutput:
        """Announce ``output``'s ADDs; decide once more if earlier announced ADDs to the same
        sections are like them.

        The second decision sees the first's lookup and, oldest first, the related ADDs in
        flight. If it adds what the first did, the announcement stands (and keeps its place
        in the order); otherwise it is withdrawn and the second's own new ADDs announced
        instead. The output carries the usage and cost of both calls.
        """
        adds = [op for op in output.update.operations if op.type == "ADD"]
        if self.in_flight is None or self.lookup.mode == LOOKUP_OFF or not adds:
            return output
        kept = [(op.section, op.content) for op in adds]
        announcement = self.in_flight.announce(_additions(kept))
        # Only ADDs to a section of its own: the prompt names sections for the task type, and
        # lessons of other task types share words ("input", "answer") but never the lesson. An
        # earlier ADD stating one of its own word for word is no reason to look again: the writer
        # adds it once (if that one is withdrawn, what made it look again is earlier still).
        own = {_add_key(op.section, op.content) for op in adds}
        sections = {_section_key(op.section) for op in adds}
        candidates = [
            op
            for op in announcement.earlier
            if _section_key(op.section) in sections and _add_key(op.section, op.content) not in own
        ]
        related = set(related_pending(candidates, [op.content for op in adds], self.lookup.k))
        if not related:
            return output
        # In the order announced, with the ones stating its own ADDs word for word: the oldest
        # announcement of a lesson is the one every later decision repeats.
        shown = [
            op for op in announcement.earlier if op in related or _add_key(op.section, op.content) in own
        ]
        logger.info(
            "skill manager decides again: %s in flight like its own",
            counted(len(shown), "ADD"),
        )
        lookup = inputs["lookup"] + being_added_section(shown)
        again = self._ask(
            self.prompt_template.format(**{**inputs, "lookup": lookup}), SkillManagerOutput, kwargs
        )
        decided = [(op.section, op.content) for op in again.update.operations if op.type == "ADD"]
        if decided != kept:
            # Kept ADDs keep their place in the order; changed ones are announced anew, at the end.
            self.in_flight.withdraw(announcement)
            restated = {(op.section, op.content) for op in shown}
            new = [add for add in decided if add not in restated]
            if new:
                self.in_flight.announce(_additions(new))
        return again.model_copy(update={"raw": {**(again.raw or {}), **_summed_usage(output, again)}})


def _section_key(section: str) -> str:
    return " ".join(section.lower().split())


def _add_key(section: str, content: str) -> tuple[str, str]:
    # As the writer compares an ADD with the skills that exist (core/skillbook.py ``_same_content``).
    return section.strip(), normalise_content(content)


def _additions(adds: list[tuple[str, str]]) -> list[PendingOperation]:
    """ADDs (section, content) as announced to the other decisions."""
    return [
        PendingOperation(proposal_id="", type="ADD", section=section, content=text) for section, text in adds
    ]


def _summed_usage(*outputs: Any) -> dict[str, Any]:
    """The ``usage`` (and ``cost``, where priced) of several calls' outputs, summed."""
    usage: dict[str, int] = {}
    cost: float | None = None
    for output in outputs:
        call_usage, call_cost = usage_and_cost(output)
        for key, value in (call_usage or {}).items():
            usage[key] = usage.get(key, 0) + value
        if call_cost is not None:
            cost = (cost or 0.0) + call_cost
    return {"usage": usage} if cost is None else {"usage": usage, "cost": cost}


def _reflection_query(reflection: ReflectorOutput, question_context: str) -> str:
    # What the reflection teaches decides which existing skills the manager must see.
    parts = [
        reflection.key_insight,
        reflection.correct_approach,
        reflection.error_identification,
        *(item.learning for item in reflection.extracted_learnings),
        question_context,
    ]
    return "\n".join(part for part in parts if part)
