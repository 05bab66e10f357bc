"""A runnable's input with the skillbook in it, and the task it states.

Inputs come in the shapes LangChain takes: a string, a dict of prompt
variables (the task under ``input_key``), a LangGraph state ``{"messages": [...]}``
or a list of messages. A string or prompt variable gets the context before the
task; a message list gets it as a system message, merged into the first one
when the list starts with a system message (some providers take only one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...traces.skillbook_context import prefix_task
from ...traces.trace_text import part_text
from .values import is_message, text_of

__all__ = ["inject_into_input", "task_of"]

MESSAGES_KEY = "messages"
HUMAN_ROLES = ("human", "user")
SYSTEM_ROLES = ("system",)


def task_of(value: Any, input_key: str = "input") -> str:
    """The task an input states: the string, the prompt variable, or the last human message."""
    if isinstance(value, str):
        return value
    question = getattr(value, "question", None)
    if isinstance(question, str):
        return question
    if isinstance(value, Mapping):
        if isinstance(value.get(input_key), str):
            return str(value[input_key])
        if isinstance(value.get(MESSAGES_KEY), Sequence):
            return _last_human_text(value[MESSAGES_KEY])
        return json.dumps(value, ensure_ascii=False, default=str)
    if _is_message_list(value):
        return _last_human_text(value)
    return text_of(value)


def inject_into_input(value: Any, context: str, input_key: str = "input") -> Any:
    """``value`` with ``context`` (the wrapped skillbook) in it; ``value`` itself when context is empty.

    The input's shape is checked whether or not there is a context: an input with no place
    for the skillbook fails while the skillbook is still empty, on the first input, not on
    every input once the first skill is learned.

    Raises:
        TypeError: the input has no place for the context (a dict with neither
            ``input_key`` nor ``messages``, or an unknown shape), naming what it has.
    """
    if isinstance(value, str) or isinstance(getattr(value, "question", None), str):
        return prefix_task(task_of(value), context) if context else value
    if isinstance(value, Mapping):
        if isinstance(value.get(input_key), str):
            return {**value, input_key: prefix_task(value[input_key], context)} if context else value
        if isinstance(value.get(MESSAGES_KEY), Sequence):
            if not context:
                return value
            return {**value, MESSAGES_KEY: _with_system_context(value[MESSAGES_KEY], context)}
        raise TypeError(
            f"LangChainExecuteStep: the input dict has no string {input_key!r} and no 'messages' to put "
            f"the skillbook in (its keys: {sorted(map(str, value))}); set input_key= to the prompt "
            "variable that holds the task"
        )
    if _is_message_list(value):
        return _with_system_context(value, context) if context else value
    raise TypeError(
        "LangChainExecuteStep takes a string, a dict of prompt variables, a {'messages': [...]} state or "
        f"a list of messages, got {type(value).__name__}"
    )


def _with_system_context(messages: Sequence[Any], context: str) -> list[Any]:
    from langchain_core.messages import SystemMessage, convert_to_messages

    converted = convert_to_messages(list(messages))
    if converted and converted[0].type in SYSTEM_ROLES:
        first = SystemMessage(content=f"{context}\n\n{part_text(converted[0].content)}")
        return [first, *converted[1:]]
    return [SystemMessage(content=context), *converted]


def _is_message_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(_is_message_like(m) for m in value)


def _is_message_like(message: Any) -> bool:
    if isinstance(message, Mapping):
        return "content" in message and "role" in message
    if isinstance(message, tuple):
        return len(message) == 2 and isinstance(message[0], str)
    return is_message(message)


def _role_and_text(message: Any) -> tuple[str, str]:
    if isinstance(message, Mapping):
        return str(message.get("role")), part_text(message.get("content"))
    if isinstance(message, tuple):
        return message[0], part_text(message[1])
    return str(getattr(message, "type", "")), text_of(message)


def _last_human_text(messages: Sequence[Any]) -> str:
    texts = [text for role, text in map(_role_and_text, messages) if role in HUMAN_ROLES]
    return texts[-1] if texts else ""
