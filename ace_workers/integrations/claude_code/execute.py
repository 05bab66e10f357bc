"""ClaudeCodeExecuteStep: run Claude Code on a task with the skillbook in its prompt."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core.context import ACEStepContext
from ...core.prompt_budget import DEFAULT_PROMPT_BUDGET, PromptBudget
from ...steps._checks import require_field
from ...traces.claude_code.events import result_event
from ...traces.claude_code.result import ClaudeCodeResult
from ...traces.skillbook_context import inject_skillbook_context
from ..tasks import task_text
from .process import ClaudeRun, find_claude, print_mode_args, run_claude

__all__ = ["ClaudeCodeExecuteStep"]


class ClaudeCodeExecuteStep:
    """Provide ``trace``: a :class:`ClaudeCodeResult` of running ``claude -p`` on ``ctx.sample``.

    The task (a string, or an object with a ``question``) goes to the CLI with
    the skillbook's strategies before it, cut to ``prompt_budget`` by relevance
    to the task. The CLI runs in ``working_dir`` with ``--output-format
    stream-json --verbose``. A run that fails (non-zero exit, timeout, an
    error result) is recorded in the result, not raised: the learning tail
    learns from failures too.

    Raises:
        MissingExecutableError: at construction, when ``executable`` is not installed.
    """

    # On the fleet it is served the version of the sample's label (distributed/worker/serving.py).
    serves_skillbook = True
    requires = frozenset({"sample", "skillbook"})
    provides = frozenset({"trace"})

    def __init__(
        self,
        working_dir: str | os.PathLike[str] | None = None,
        *,
        executable: str = "claude",
        model: str | None = None,
        timeout_seconds: float | None = 600.0,
        max_turns: int | None = None,
        allowed_tools: Sequence[str] | None = None,
        permission_mode: str | None = None,
        extra_args: Sequence[str] = (),
        prompt_budget: PromptBudget | None = DEFAULT_PROMPT_BUDGET,
    ) -> None:
        self.executable = find_claude(executable, "ClaudeCodeExecuteStep")
        self.working_dir = Path(working_dir) if working_dir is not None else None
        if self.working_dir is not None and not self.working_dir.is_dir():
            raise NotADirectoryError(f"ClaudeCodeExecuteStep: working_dir {self.working_dir} is not a folder")
        self.timeout_seconds = timeout_seconds
        self.prompt_budget = prompt_budget
        self.args = print_mode_args(
            "stream-json",
            model=model,
            max_turns=max_turns,
            allowed_tools=allowed_tools,
            permission_mode=permission_mode,
            extra_args=extra_args,
        )

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        task = task_text(
            require_field(ctx.sample, "ClaudeCodeExecuteStep", "sample"), "ClaudeCodeExecuteStep"
        )
        skillbook = require_field(ctx.skillbook, "ClaudeCodeExecuteStep", "skillbook")
        prompt = inject_skillbook_context(task, skillbook, budget=self.prompt_budget)
        run = run_claude(
            self.executable, self.args, prompt, cwd=self.working_dir, timeout=self.timeout_seconds
        )
        return ctx.replace(trace=self.to_result(task, run))

    def to_result(self, task: str, run: ClaudeRun) -> ClaudeCodeResult:
        """The result of one run: its final result event if any, and what went wrong if anything."""
        final = result_event(run.events)
        output = final.get("result") if final is not None else None
        reported_error = final is not None and bool(final.get("is_error"))
        error = None
        if run.returncode is None:
            error = f"claude was stopped after {self.timeout_seconds} s (timeout_seconds)"
        elif run.returncode != 0:
            error = f"claude exited with code {run.returncode}" + _stderr_tail(run.stderr)
        elif final is None:
            error = "claude printed no result event" + _stderr_tail(run.stderr)
        elif reported_error:
            error = f"claude reported {final.get('subtype', 'an error')}: {output or ''}".rstrip(": ")
        return ClaudeCodeResult(
            task=task,
            success=error is None,
            output=output if isinstance(output, str) else "",
            execution_trace=run.events,
            returncode=run.returncode,
            error=error,
            session_id=_get(final, "session_id", str),
            cost_usd=_get(final, "total_cost_usd", float),
            usage=_get(final, "usage", dict) or {},
            num_turns=_get(final, "num_turns", int),
            duration_seconds=run.duration_seconds,
            skipped_lines=run.skipped_lines,
        )

    def __repr__(self) -> str:
        return f"ClaudeCodeExecuteStep(working_dir={self.working_dir!r}, executable={self.executable!r})"


def _stderr_tail(stderr: str) -> str:
    text = stderr.strip()
    return f"; stderr: {text[-500:]}" if text else ""


def _get(event: dict[str, Any] | None, key: str, kind: type) -> Any:
    value = None if event is None else event.get(key)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None
