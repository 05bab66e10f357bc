"""BrowserUse: a browser-use agent runs each task with the skillbook in its prompt; ACE learns from it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pipeline import Pipeline

from ..core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget
from ..core.skillbook import Skillbook
from ..extras import require_extra
from ..integrations.browser_use import BrowserExecuteStep, BrowserToTrace
from ..integrations.browser_use.execute import DEFAULT_MAX_STEPS, agent_options
from ..protocols import LLMClientLike, ReflectorLike, SkillManagerLike
from ..roles import Reflector, SkillManager
from ..steps import check_tail_options, learning_tail, tail_option_names
from .integration import IntegrationRunner, roles_llm, starting_skillbook

__all__ = ["BrowserUse"]


class BrowserUse(IntegrationRunner):
    """BrowserExecute -> BrowserToTrace in the foreground; Reflect -> Tag -> Update -> Apply behind.

    Inputs are task strings (or objects with a ``question``). Each result's
    ``output.trace`` is the trace dict the Reflector saw; a failed run fails
    nothing: its error is in the trace, to learn from.
    """

    @classmethod
    def build_steps(
        cls,
        *,
        browser_llm: Any,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook,
        browser: Any = None,
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
        max_steps: int = DEFAULT_MAX_STEPS,
        extra_steps: Sequence[Any] | None = None,
        **options: Any,
    ) -> list[Any]:
        """The steps ``from_roles`` would compose, to inspect or recompose.

        ``options`` are :func:`~ace_workers.steps.learning_tail`'s (dedup_manager or
        dedup_config, dedup_interval, checkpoint_dir, checkpoint_interval) and,
        every other name, ``browser_use.Agent``'s (use_vision, max_actions_per_step, ...);
        ``extra_steps`` are appended last.

        Raises:
            MissingExtraError: browser-use is not installed.
            UnknownOptionError: an option neither the tail nor ``browser_use.Agent`` takes.
        """
        require_extra("browser-use", "BrowserUse")
        check_tail_options(options, "BrowserUse.from_roles", also=agent_options())
        tail = {name: options.pop(name) for name in tail_option_names() if name in options}
        execute = BrowserExecuteStep(
            browser_llm, browser, prompt_budget=prompt_budget, max_steps=max_steps, **options
        )
        steps: list[Any] = learning_tail(reflector, skill_manager, skillbook, **tail)
        return [execute, BrowserToTrace(), *steps, *(extra_steps or [])]

    @classmethod
    def from_roles(
        cls,
        *,
        browser_llm: Any,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook | None = None,
        skillbook_path: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> BrowserUse:
        """Build from role instances; ``skillbook_path`` loads the skillbook from a file; options as in
        :meth:`build_steps`.

        Raises:
            MissingExtraError: browser-use is not installed.
            UnknownOptionError: an option neither the tail nor ``browser_use.Agent`` takes.
        """
        skillbook = starting_skillbook(skillbook, skillbook_path, "BrowserUse.from_roles")
        steps = cls.build_steps(
            browser_llm=browser_llm,
            reflector=reflector,
            skill_manager=skill_manager,
            skillbook=skillbook,
            **options,
        )
        return cls(Pipeline(steps), skillbook)

    @classmethod
    def from_model(
        cls,
        browser_llm: Any,
        *,
        ace_model: str = "gpt-4o-mini",
        ace_max_tokens: int = 2048,
        ace_llm: LLMClientLike | None = None,
        **options: Any,
    ) -> BrowserUse:
        """Build with a Reflector and SkillManager on ``ace_llm``, else on ``ace_model``: "sim" (the
        simulated LLM) or a litellm model, whose provider and credentials are checked now
        (ModelUnavailableError).

        ``browser_llm`` drives the browser (a ``browser_use.llm`` chat model);
        the ACE roles never use it.
        """
        if ace_llm is None:
            ace_llm = roles_llm(ace_model, ace_max_tokens)
        return cls.from_roles(
            browser_llm=browser_llm,
            reflector=Reflector(ace_llm),
            skill_manager=SkillManager(ace_llm),
            **options,
        )
