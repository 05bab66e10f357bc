"""The SkillManager role: turns a reflection into skillbook delta operations."""

from __future__ import annotations

import json
import logging
from typing import Any

from ..core.outputs import ReflectorOutput, SkillManagerOutput
from ..core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget, RelevanceScorer
from ..counts import counted
from ..protocols import LLMClientLike, SkillbookLike
from .base import LLMRole
from .helpers import current_date, format_optional
from .prompts import SKILL_MANAGER_PROMPT

__all__ = ["SkillManager"]

logger = logging.getLogger(__name__)


class SkillManager(LLMRole):
    """Decides which skills to add, update, tag or remove after a reflection.

    It only proposes an :class:`~ace_workers.core.UpdateBatch`; applying it (and
    deduplication) are separate steps. Satisfies
    :class:`~ace_workers.protocols.SkillManagerLike`; LLM errors propagate.

    A skillbook over ``prompt_budget`` (None: no limit) is cut to the skills
    most relevant to the reflection's learnings, by ``relevance`` (default:
    shared words).
    """

    def __init__(
        self,
        llm: LLMClientLike,
        prompt_template: str = SKILL_MANAGER_PROMPT,
        *,
        max_retries: int = 3,
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
        relevance: RelevanceScorer | None = None,
    ) -> None:
        super().__init__(
            llm, prompt_template, max_retries=max_retries, prompt_budget=prompt_budget, relevance=relevance
        )

    def build_prompt(
        self,
        reflection: ReflectorOutput,
        skillbook: SkillbookLike,
        question_context: str = "",
        progress: str = "",
    ) -> str:
        """The prompt :meth:`update_skills` sends, for inspection and logging."""
        return self.prompt_template.format(
            current_date=current_date(),
            progress=format_optional(progress),
            question_context=format_optional(question_context),
            stats=json.dumps(skillbook.stats(), ensure_ascii=False),
            skillbook=self._skillbook_prompt(skillbook, _reflection_query(reflection, question_context)),
            # ``raw`` is excluded by the model: provider metadata is no input.
            # TagStep applies the reflection's skill_tags; showing them here would count them twice.
            reflection=reflection.model_dump_json(exclude={"skill_tags"}),
        )

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
        prompt = self.build_prompt(reflection, skillbook, question_context, progress)
        output = self._ask(prompt, SkillManagerOutput, kwargs)
        logger.debug("skill manager proposed %s", counted(len(output.update.operations), "operation"))
        return output


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
