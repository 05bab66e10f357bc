"""LangChain: run a runnable with the skillbook in its input and learn from its runs (extra ``langchain``).

- :class:`LangChainExecuteStep` -> :class:`LangChainResult` -> :class:`LangChainToTrace`:
  the execute head of the :class:`~ace_workers.runners.LangChain` runner.
- :class:`AceCallbackHandler`: a callback handler that sends every top-level
  run of the user's own app to the workers as a trace (the fleet path).
- :class:`~ace_workers.providers.LangChainLiteLLMClient`: ACE's roles on ``ChatLiteLLM``.

Importing this package imports no LangChain module; the steps check the extra
when they are built, and ``AceCallbackHandler`` (a real ``BaseCallbackHandler``
subclass) imports ``langchain_core`` when it is first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...providers.langchain_litellm import LangChainLiteLLMClient
from ...traces.langchain import LangChainResult, LangChainToTrace, langchain_result_to_trace
from .execute import LangChainExecuteStep

if TYPE_CHECKING:
    from .callback import AceCallbackHandler, HandlerStats

__all__ = [
    # execute -> convert
    "LangChainExecuteStep",
    "LangChainResult",
    "LangChainToTrace",
    "langchain_result_to_trace",
    # the fleet path
    "AceCallbackHandler",
    "HandlerStats",
    # ACE's roles on LangChain
    "LangChainLiteLLMClient",
]

# Names whose module imports langchain_core, loaded on first use.
_NEEDS_LANGCHAIN = {"AceCallbackHandler", "HandlerStats"}


def __getattr__(name: str) -> Any:
    if name in _NEEDS_LANGCHAIN:
        from ...extras import require_extra

        require_extra("langchain", name)
        from . import callback

        return getattr(callback, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
