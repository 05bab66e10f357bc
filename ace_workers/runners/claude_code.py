"""ClaudeCode: Claude Code runs each task with the skillbook in its prompt, then ACE learns from the run."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pipeline import Pipeline

from ..core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget
from ..core.skillbook import Skillbook
from ..integrations.claude_code import ClaudeCodeExecuteStep, ClaudeCodeToTrace
from ..protocols import LLMClientLike, ReflectorLike, SkillManagerLike
from ..roles import Reflector, SkillManager
from ..steps import check_tail_options, learning_tail
from .integration import IntegrationRunner, roles_llm, starting_skillbook

__all__ = ["ClaudeCode"]

# What from_roles takes for the execute step, besides the tail's options.
EXECUTE_OPTIONS = (
    "executable",
    "model",
    "timeout_seconds",
    "max_turns",
    "allowed_tools",
    "permission_mode",
    "extra_args",
)


class ClaudeCode(IntegrationRunner):
    """ClaudeCodeExecute -> ClaudeCodeToTrace in the foreground; Reflect -> Tag -> Update -> Apply behind.

    Inputs are task strings (or objects with a ``question``). Each result's
    ``output.trace`` is the trace dict the Reflector saw; a failed run fails
    nothing: its error is in the trace, to learn from.
    """

    @classmethod
    def build_steps(
        cls,
        *,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook,
        working_dir: str | os.PathLike[str] | None = None,
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
        extra_steps: Sequence[Any] | None = None,
        **options: Any,
    ) -> list[Any]:
        """The steps ``from_roles`` would compose, to inspect or recompose.

        ``options`` are the execute step's (executable, model, timeout_seconds,
        max_turns, allowed_tools, permission_mode, extra_args) and
        :func:`~ace_workers.steps.learning_tail`'s (dedup_manager or
        dedup_config, dedup_interval, checkpoint_dir, checkpoint_interval);
        ``extra_steps`` are appended last.
        """
        check_tail_options(options, "ClaudeCode.from_roles", also=EXECUTE_OPTIONS)
        execute = {name: options.pop(name) for name in EXECUTE_OPTIONS if name in options}
        tail: list[Any] = learning_tail(reflector, skill_manager, skillbook, **options)
        return [
            ClaudeCodeExecuteStep(working_dir, prompt_budget=prompt_budget, **execute),
            ClaudeCodeToTrace(),
            *tail,
            *(extra_steps or []),
        ]

    @classmethod
    def from_roles(
        cls,
        *,
        reflector: ReflectorLike,
        skill_manager: SkillManagerLike,
        skillbook: Skillbook | None = None,
        skillbook_path: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> ClaudeCode:
        """Build from role instances; ``skillbook_path`` loads the skillbook from a file; options as in
        :meth:`build_steps`.

        Raises:
            MissingExecutableError: the ``claude`` CLI is not installed.
        """
        skillbook = starting_skillbook(skillbook, skillbook_path, "ClaudeCode.from_roles")
        steps = cls.build_steps(
            reflector=reflector, skill_manager=skill_manager, skillbook=skillbook, **options
        )
        return cls(Pipeline(steps), skillbook)

    @classmethod
    def from_model(
        cls,
        working_dir: str | os.PathLike[str] | None = None,
        *,
        ace_model: str = "gpt-4o-mini",
        ace_max_tokens: int = 2048,
        ace_llm: LLMClientLike | None = None,
        **options: Any,
    ) -> ClaudeCode:
        """Build with a Reflector and SkillManager on ``ace_llm``, else on ``ace_model``: "sim" (the
        simulated LLM) or a litellm model, whose provider and credentials are checked now
        (ModelUnavailableError).

        ``ace_model="claude-code"`` uses the ``claude`` CLI itself for the roles
        (:class:`~ace_workers.integrations.claude_code.ClaudeCodeLLMClient`).
        """
        if ace_llm is None:
            if ace_model == "claude-code":
                from ..integrations.claude_code import ClaudeCodeLLMClient

                executable = options.get("executable", "claude")
                ace_llm = ClaudeCodeLLMClient(executable=executable, working_dir=working_dir)
            else:
                ace_llm = roles_llm(ace_model, ace_max_tokens)
        return cls.from_roles(
            reflector=Reflector(ace_llm),
            skill_manager=SkillManager(ace_llm),
            working_dir=working_dir,
            **options,
        )
