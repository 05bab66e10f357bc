"""Bridges between ace-workers and the agent frameworks its users' agents run in.

Each integration lives in a subpackage of its own; nothing here imports a
third-party package at ``import ace_workers.integrations`` time. This layer sits
above :mod:`ace_workers.distributed` (the LangChain callback sends runs to the
workers) and below :mod:`ace_workers.runners`; the trace converters the
integrations use are in :mod:`ace_workers.traces`, below the workers, and are
re-exported here under the spec's paths.

- :mod:`ace_workers.integrations.claude_code`: run Claude Code with the skillbook,
  learn from its runs and session transcripts, use the ``claude`` CLI as an LLM
  (no Python extra: the CLI is an external program).
- :mod:`ace_workers.integrations.langchain`: run a LangChain runnable with the skillbook,
  learn from its runs, send a LangChain app's runs to the workers (extra ``langchain``).
- :mod:`ace_workers.integrations.browser_use`: run a browser-use agent with the skillbook,
  learn from its runs and recorded histories (extra ``browser-use``).
- :mod:`ace_workers.integrations.openclaw`: learn from OpenClaw session files (no extra).

The MCP server is :mod:`ace_workers.mcp`: it serves ACELiteLLM (a runner), so it sits above the runners.

The names below are the execute steps, result types and ToTrace converters
(importable without their extras: a step checks its extra when it is built),
and :func:`wrap_skillbook_context`.
"""

from ..traces.skillbook_context import inject_skillbook_context, wrap_skillbook_context
from .browser_use import BrowserExecuteStep, BrowserResult, BrowserToTrace, browser_history_to_trace
from .claude_code import (
    ClaudeCodeExecuteStep,
    ClaudeCodeLLMClient,
    ClaudeCodeLLMConfig,
    ClaudeCodeResult,
    ClaudeCodeToTrace,
    claude_events_to_trace,
    read_claude_code_transcript,
)
from .langchain import LangChainExecuteStep, LangChainResult, LangChainToTrace
from .openclaw import OpenClawToTraceStep, openclaw_events_to_trace

__all__ = [
    # the skillbook in an external agent's prompt
    "wrap_skillbook_context",
    "inject_skillbook_context",
    # Claude Code
    "ClaudeCodeExecuteStep",
    "ClaudeCodeResult",
    "ClaudeCodeToTrace",
    "ClaudeCodeLLMClient",
    "ClaudeCodeLLMConfig",
    "claude_events_to_trace",
    "read_claude_code_transcript",
    # LangChain
    "LangChainExecuteStep",
    "LangChainResult",
    "LangChainToTrace",
    # browser-use
    "BrowserExecuteStep",
    "BrowserResult",
    "BrowserToTrace",
    "browser_history_to_trace",
    # OpenClaw
    "OpenClawToTraceStep",
    "openclaw_events_to_trace",
]
