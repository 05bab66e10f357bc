"""LangChain: a runnable answers each input with the skillbook in it, then ACE learns from the run."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from pipeline import Pipeline

from ..core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget
from ..core.skillbook import Skillbook
from ..integrations.langchain import LangChainExecuteStep, LangChainToTrace
from ..protocols import LLMClientLike, ReflectorLike, SkillManagerLike
from ..roles import Reflector, SkillManager
from ..steps import check_tail_options, learning_tail
from .integration import IntegrationRunner, roles_llm, starting_skillbook

__all__ = ["LangChain"]

# What from_roles takes for the execute step, besides the tail's options.
EXECUTE_OPTIONS = ("input_key", "config")


class LangChain(IntegrationRunner):
    """LangChainExecute -> LangChainToTrace in the foreground; Reflect -> Tag -> Update -> Apply behind.

    Inputs are what the runnable takes: strings, dicts of prompt variables,
    LangGraph states, message lists. Each result's ``output.trace`` is the trace
    dict the Reflector saw; a run that raised fails nothing: its error is in
    the trace, to learn from.
    """

    @classmethod
    def build_steps(
        cls,
        *,
        runnable: Any,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook,
        output_parser: Callable[[Any], str] | None = None,
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
        extra_steps: Sequence[Any] | None = None,
        **options: Any,
    ) -> list[Any]:
        """The steps ``from_roles`` would compose, to inspect or recompose.

        ``options`` are the execute step's (input_key, config) and
        :func:`~ace_workers.steps.learning_tail`'s (dedup_manager or
        dedup_config, dedup_interval, checkpoint_dir, checkpoint_interval);
        ``extra_steps`` are appended last.
        """
        check_tail_options(options, "LangChain.from_roles", also=EXECUTE_OPTIONS)
        execute = {name: options.pop(name) for name in EXECUTE_OPTIONS if name in options}
        tail: list[Any] = learning_tail(reflector, skill_manager, skillbook, **options)
        return [
            LangChainExecuteStep(
                runnable, output_parser=output_parser, prompt_budget=prompt_budget, **execute
            ),
            LangChainToTrace(),
            *tail,
            *(extra_steps or []),
        ]

    @classmethod
    def from_roles(
        cls,
        *,
        runnable: Any,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook | None = None,
        skillbook_path: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> LangChain:
        """Build from a runnable and role instances; ``skillbook_path`` loads the skillbook from a file;
        options as in :meth:`build_steps`.

        Raises:
            MissingExtraError: the ``langchain`` extra is not installed.
        """
        skillbook = starting_skillbook(skillbook, skillbook_path, "LangChain.from_roles")
        steps = cls.build_steps(
            runnable=runnable,
            reflector=reflector,
            skill_manager=skill_manager,
            skillbook=skillbook,
            **options,
        )
        return cls(Pipeline(steps), skillbook)

    @classmethod
    def from_model(
        cls,
        runnable: Any,
        *,
        ace_model: str = "gpt-4o-mini",
        ace_max_tokens: int = 2048,
        ace_llm: LLMClientLike | None = None,
        **options: Any,
    ) -> LangChain:
        """Build with a Reflector and SkillManager on ``ace_llm``, else on ``ace_model``: "sim" (the
        simulated LLM) or a litellm model, whose provider and credentials are checked now
        (ModelUnavailableError).
        """
        if ace_llm is None:
            ace_llm = roles_llm(ace_model, ace_max_tokens)
        return cls.from_roles(
            runnable=runnable, reflector=Reflector(ace_llm), skill_manager=SkillManager(ace_llm), **options
        )
