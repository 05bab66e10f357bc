"""LangChain values (messages, documents, agent actions, tool outputs) as plain JSON values and text.

Duck-typed on purpose: nothing here imports langchain_core, so results and
traces can be built and read where the extra is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...traces.trace_text import DEFAULT_MAX_STEP_CHARS, cut_text, part_text

__all__ = ["is_message", "message_dict", "plain", "text_of"]

# Nested containers deeper than this are shown as text: a trace is for reading.
MAX_DEPTH = 6


def text_of(value: Any) -> str:
    """The readable text of a value: a string, a message's content, a document's page, else JSON."""
    if isinstance(value, str):
        return value
    if is_message(value):
        return part_text(value.content)
    page = getattr(value, "page_content", None)
    if isinstance(page, str):
        return page
    return part_text(plain(value))


def plain(value: Any, limit: int = DEFAULT_MAX_STEP_CHARS, _depth: int = 0) -> Any:
    """``value`` as a JSON value: messages as role/content dicts, long strings cut to ``limit``."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return cut_text(value, limit)
    if _depth >= MAX_DEPTH:
        return cut_text(repr(value), limit)
    if is_message(value):
        return message_dict(value, limit)
    if isinstance(value, Mapping):
        return {str(key): plain(item, limit, _depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item, limit, _depth + 1) for item in value]
    page = getattr(value, "page_content", None)
    if isinstance(page, str):
        return {"page_content": cut_text(page, limit), "metadata": plain(getattr(value, "metadata", {}))}
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # pydantic models, AgentAction among them
        try:
            return plain(dump(mode="json"), limit, _depth + 1)
        except Exception:  # a model that cannot dump itself is still readable as its repr
            pass
    return cut_text(str(value), limit)


def message_dict(message: Any, limit: int = DEFAULT_MAX_STEP_CHARS) -> dict[str, Any]:
    """A LangChain message as ``{"role", "content"}`` plus its tool calls or tool name when it has them."""
    entry: dict[str, Any] = {
        "role": getattr(message, "type", "message"),
        "content": cut_text(part_text(getattr(message, "content", "")), limit),
    }
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        entry["tool_calls"] = [
            {"name": call.get("name"), "args": plain(call.get("args"), limit)}
            for call in tool_calls
            if isinstance(call, Mapping)
        ]
    name = getattr(message, "name", None)
    if entry["role"] == "tool" and name:
        entry["name"] = name
    return entry


def is_message(value: Any) -> bool:
    """A LangChain message (``BaseMessage``): a content and a type such as "human", "ai", "tool"."""
    return hasattr(value, "content") and isinstance(getattr(value, "type", None), str)
