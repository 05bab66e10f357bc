"""Claude Code: run it with the skillbook in its prompt, learn from its sessions, or use the CLI as an LLM.

Needs no Python package: the ``claude`` CLI is an external program
(``npm install -g @anthropic-ai/claude-code``); a step or client that runs it
fails at construction, naming that, when it is not installed.

- :class:`ClaudeCodeExecuteStep` -> :class:`ClaudeCodeResult` -> :class:`ClaudeCodeToTrace`:
  the execute head of the :class:`~ace_workers.runners.ClaudeCode` runner.
- :func:`read_claude_code_transcript`: a recorded session file as a trace
  (for :class:`~ace_workers.runners.TraceAnalyser` or ``ace-workers enqueue --format claude-code``).
- :class:`ClaudeCodeLLMClient`: the CLI behind the Reflector and SkillManager.
"""

from ...traces.claude_code import (
    ClaudeCodeResult,
    ClaudeCodeToTrace,
    claude_events_to_trace,
    read_claude_code_transcript,
)
from .execute import ClaudeCodeExecuteStep
from .llm_client import ClaudeCodeLLMClient, ClaudeCodeLLMConfig
from .process import CLAUDE_INSTALL_HINT

__all__ = [
    # execute -> convert
    "ClaudeCodeExecuteStep",
    "ClaudeCodeResult",
    "ClaudeCodeToTrace",
    # recorded sessions
    "claude_events_to_trace",
    "read_claude_code_transcript",
    # the CLI as an LLM
    "ClaudeCodeLLMClient",
    "ClaudeCodeLLMConfig",
    "CLAUDE_INSTALL_HINT",
]
