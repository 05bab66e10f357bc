"""The Reflector role: diagnoses one attempt and extracts reusable lessons."""

from __future__ import annotations

import logging
from typing import Any

from ..core.outputs import AgentOutput, ReflectorOutput
from ..counts import counted
from ..protocols import LLMClientLike, SkillbookLike
from .base import LLMRole
from .helpers import reflection_inputs
from .prompts import REFLECTOR_PROMPT

__all__ = ["Reflector"]

logger = logging.getLogger(__name__)


class Reflector(LLMRole):
    """Analyses an agent's output against ground truth and feedback (single pass).

    The prompt holds only the skills the agent cited, not the whole skillbook:
    the Reflector judges what was used, the SkillManager sees everything.
    Satisfies :class:`~ace_workers.protocols.ReflectorLike`; LLM errors propagate.
    """

    def __init__(
        self, llm: LLMClientLike, prompt_template: str = REFLECTOR_PROMPT, *, max_retries: int = 3
    ) -> None:
        super().__init__(llm, prompt_template, max_retries=max_retries)

    def build_prompt(
        self,
        question: str,
        agent_output: AgentOutput,
        skillbook: SkillbookLike,
        ground_truth: str | None = None,
        feedback: str | None = None,
        trace: object | None = None,
    ) -> str:
        """The prompt :meth:`reflect` sends, for inspection and logging."""
        return self.prompt_template.format(
            **reflection_inputs(question, agent_output, skillbook, ground_truth, feedback, trace)
        )

    def reflect(
        self,
        question: str,
        agent_output: AgentOutput,
        skillbook: SkillbookLike,
        ground_truth: str | None = None,
        feedback: str | None = None,
        **kwargs: Any,
    ) -> ReflectorOutput:
        """Ask the LLM for a reflection on ``agent_output``.

        A ``trace`` keyword (the raw record TraceAnalyser passes) is rendered into
        the prompt's Trace section, cut to ``MAX_TRACE_CHARS``. Other keyword
        arguments go to ``llm.complete_structured``.
        """
        trace = kwargs.pop("trace", None)
        prompt = self.build_prompt(question, agent_output, skillbook, ground_truth, feedback, trace)
        reflection = self._ask(prompt, ReflectorOutput, kwargs)
        logger.debug(
            "reflection: %s, %s",
            counted(len(reflection.extracted_learnings), "learning"),
            counted(len(reflection.skill_tags), "tag"),
        )
        return reflection
