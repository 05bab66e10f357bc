"""The Agent role: answers a question with the skillbook's strategies in its prompt."""

from __future__ import annotations

import logging
from typing import Any

from ..core.outputs import AgentOutput, ReflectorOutput
from ..core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget, RelevanceScorer
from ..protocols import LLMClientLike, SkillbookLike
from .base import LLMRole
from .helpers import current_date, extract_cited_skill_ids, format_optional
from .prompts import AGENT_PROMPT

__all__ = ["Agent"]

logger = logging.getLogger(__name__)


class Agent(LLMRole):
    """Produces an answer with reasoning that cites the skills it applied.

    Satisfies :class:`~ace_workers.protocols.AgentLike`. LLM errors propagate
    unchanged: the pipeline records a failed sample, the role does not hide it.

    A skillbook over ``prompt_budget`` (None: no limit) is cut to the skills
    most relevant to the question and context, by ``relevance`` (default:
    shared words; :meth:`DeduplicationManager.relevance
    <ace_workers.dedup.DeduplicationManager.relevance>` ranks by embeddings).
    """

    def __init__(
        self,
        llm: LLMClientLike,
        prompt_template: str = AGENT_PROMPT,
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
        question: str,
        context: str,
        skillbook: SkillbookLike,
        reflection: ReflectorOutput | str | None = None,
    ) -> str:
        """The prompt :meth:`generate` sends, for inspection and logging."""
        if isinstance(reflection, ReflectorOutput):
            reflection = reflection.model_dump_json()
        return self.prompt_template.format(
            current_date=current_date(),
            skillbook=self._skillbook_prompt(skillbook, f"{question}\n{context}"),
            reflection=format_optional(reflection),
            question=question,
            context=format_optional(context),
        )

    def generate(
        self,
        question: str,
        context: str,
        skillbook: SkillbookLike,
        reflection: ReflectorOutput | str | None = None,
        **kwargs: Any,
    ) -> AgentOutput:
        """Ask the LLM for an answer, then fill ``skill_ids`` from the reasoning's citations.

        ``skill_ids`` keeps every id cited in the ``[section-00001]`` form, even
        one the skillbook does not hold: a hallucinated citation is a signal the
        Reflector and the logs should see. Steps that write (tagging) skip and log
        unknown ids. Extra keyword arguments go to ``llm.complete_structured``.
        """
        prompt = self.build_prompt(question, context, skillbook, reflection)
        output = self._ask(prompt, AgentOutput, kwargs)
        output.skill_ids = extract_cited_skill_ids(output.reasoning)
        logger.debug("agent answered %r citing %s", output.final_answer, output.skill_ids)
        return output
