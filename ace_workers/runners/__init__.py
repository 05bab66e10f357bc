"""Runners: the epoch loop around a pipeline of ACE steps."""

from .ace import ACE
from .ace_litellm import ACELiteLLM
from .base import ACERunner
from .browser_use import BrowserUse
from .claude_code import ClaudeCode
from .integration import IntegrationRunner
from .langchain import LangChain
from .trace_analyser import TraceAnalyser

__all__ = [
    "ACERunner",
    "TraceAnalyser",
    "ACE",
    "ACELiteLLM",
    "IntegrationRunner",
    "ClaudeCode",
    "LangChain",
    "BrowserUse",
]
