"""Trace converters: what an agent did, as the trace dict the Reflector reads.

Pure conversion, below the fleet and the integrations: this package imports
only :mod:`ace_workers.core`, :mod:`ace_workers.steps` and the layers under
them, so the workers (which convert recorded sessions) and the integrations
(which run the agents and produce the results) both import it, and it imports
neither.

- :mod:`.claude_code`: Claude Code stream-json events and session transcripts.
- :mod:`.openclaw`: OpenClaw session files.
- :mod:`.browser_use`: browser-use runs and recorded histories.
- :mod:`.langchain`: LangChain runs.
- :mod:`.session_trace` and :mod:`.trace_text`: what the converters share
  (one recorder of a session's events, the bounds on a trace's text).
- :mod:`.skillbook_context`: the skillbook put before an external agent's task,
  and taken off again when its recorded task is read back.
"""

from .browser_use import BrowserResult, BrowserToTrace, browser_history_to_trace, browser_result_to_trace
from .claude_code import (
    ClaudeCodeResult,
    ClaudeCodeToTrace,
    claude_events_to_trace,
    read_claude_code_transcript,
)
from .langchain import LangChainResult, LangChainToTrace, langchain_result_to_trace
from .openclaw import OpenClawToTraceStep, openclaw_events_to_trace
from .session_trace import SessionRecorder
from .skillbook_context import inject_skillbook_context, wrap_skillbook_context
from .trace_text import DEFAULT_MAX_STEP_CHARS, DEFAULT_MAX_TRACE_CHARS, TraceConverter

__all__ = [
    # what every converter shares
    "TraceConverter",
    "SessionRecorder",
    "DEFAULT_MAX_STEP_CHARS",
    "DEFAULT_MAX_TRACE_CHARS",
    # the skillbook in an external agent's prompt
    "wrap_skillbook_context",
    "inject_skillbook_context",
    # Claude Code
    "ClaudeCodeResult",
    "ClaudeCodeToTrace",
    "claude_events_to_trace",
    "read_claude_code_transcript",
    # OpenClaw
    "OpenClawToTraceStep",
    "openclaw_events_to_trace",
    # browser-use
    "BrowserResult",
    "BrowserToTrace",
    "browser_history_to_trace",
    "browser_result_to_trace",
    # LangChain
    "LangChainResult",
    "LangChainToTrace",
    "langchain_result_to_trace",
]
