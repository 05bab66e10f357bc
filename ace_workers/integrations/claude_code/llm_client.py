"""ClaudeCodeLLMClient: the ``claude`` CLI as the LLM behind ACE's roles (no API key of ACE's own).

Each call is one ``claude -p --output-format json`` run, the prompt on stdin,
limited to one turn. Structured output asks for JSON matching the response
model's schema, validates it, and re-asks with the validation error a bounded
number of times, as :class:`~ace_workers.providers.InstructorClient` does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from ...errors import ExternalAgentError
from ...providers.reask import complete_structured_by_reasking
from ...providers.response import LLMResponse
from ...traces.claude_code.events import result_event
from .process import find_claude, print_mode_args, run_claude

__all__ = ["ClaudeCodeLLMClient", "ClaudeCodeLLMConfig"]

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class ClaudeCodeLLMConfig:
    """How the client runs the CLI.

    Args:
        executable: ``claude`` on PATH, or its path.
        model: ``--model`` (an alias such as ``sonnet`` or a full name); None: the CLI's default.
        max_retries: re-asks after a structured reply fails validation.
        timeout_seconds: a run still going after this is killed (an ExternalAgentError).
        max_turns: ``--max-turns``; 1 keeps a role call a single answer, no tool use.
        working_dir: where the CLI runs (it reads CLAUDE.md from there); None: this process's.
        extra_args: more CLI arguments, e.g. ``("--permission-mode", "plan")``.
    """

    executable: str = "claude"
    model: str | None = None
    max_retries: int = 2
    timeout_seconds: float = 300.0
    max_turns: int | None = 1
    working_dir: str | os.PathLike[str] | None = None
    extra_args: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"ClaudeCodeLLMConfig.max_retries must be >= 0, got {self.max_retries}")


class ClaudeCodeLLMClient:
    """An LLM client (``complete``, ``complete_structured``) that drives the ``claude`` CLI.

    Raises:
        MissingExecutableError: at construction, when the CLI is not installed.
    """

    def __init__(self, config: ClaudeCodeLLMConfig | None = None, **overrides: Any) -> None:
        base = config or ClaudeCodeLLMConfig()
        self.config = ClaudeCodeLLMConfig(**{**base.__dict__, **overrides}) if overrides else base
        self.executable = find_claude(self.config.executable, "ClaudeCodeLLMClient")
        self.args = print_mode_args(
            "json",
            model=self.config.model,
            max_turns=self.config.max_turns,
            extra_args=self.config.extra_args,
        )

    def __repr__(self) -> str:
        return f"ClaudeCodeLLMClient(executable={self.executable!r}, model={self.config.model!r})"

    def complete(self, prompt: str, **kwargs: Any) -> LLMResponse:
        """The CLI's reply to ``prompt`` (keyword arguments are accepted for the protocol and ignored).

        Raises:
            ExternalAgentError: the CLI failed, timed out, reported an error, or printed no result.
        """
        run = run_claude(
            self.executable,
            self.args,
            prompt,
            cwd=self.config.working_dir,
            timeout=self.config.timeout_seconds,
        )
        if run.returncode is None:
            raise ExternalAgentError(self.executable, f"no reply within {self.config.timeout_seconds} s")
        result = result_event(run.events)
        if run.returncode != 0 or result is None or result.get("is_error"):
            reason = (
                f"the run reported {result.get('subtype', 'an error')}: {result.get('result', '')}"
                if result is not None and result.get("is_error")
                else "no result printed"
                if result is None
                else "the run failed"
            )
            raise ExternalAgentError(self.executable, reason, run.returncode, run.stderr)
        text = result.get("result")
        if not isinstance(text, str):
            raise ExternalAgentError(self.executable, "the result holds no text", run.returncode, run.stderr)
        return LLMResponse(
            text=text,
            model=self.config.model or "claude-code",
            usage=_usage(result.get("usage")),
            cost=_cost(result.get("total_cost_usd")),
            raw=result,
        )

    def complete_structured(self, prompt: str, response_model: type[ModelT], **kwargs: Any) -> ModelT:
        """The reply validated as ``response_model``; its ``raw`` field (if any) gets usage and cost.

        Raises:
            RetriesExhausted: the reply still failed validation after ``max_retries`` re-asks.
            ExternalAgentError: the CLI failed.
        """
        max_retries = int(kwargs.pop("max_retries", self.config.max_retries))
        return complete_structured_by_reasking(self.complete, prompt, response_model, max_retries)


def _usage(usage: Any) -> dict[str, int]:
    """The CLI's Anthropic usage as prompt/completion/total tokens (cache reads and writes are prompt)."""
    if not isinstance(usage, dict):
        usage = {}
    prompt = sum(
        int(usage.get(key) or 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    completion = int(usage.get("output_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _cost(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
