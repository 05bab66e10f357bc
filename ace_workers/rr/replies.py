"""Reading the LLM's replies: their text, and the code block in it."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["extract_code", "reply_cost", "reply_model", "reply_text", "reply_usage"]

# A fenced block; the language tag, if any, is the first word after the fence.
_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)```", re.DOTALL)
_PYTHON_TAGS = frozenset({"python", "py", "python3"})


def extract_code(text: str) -> str | None:
    """The first ```python block of ``text`` (else the first untagged block); None when there is none."""
    untagged: str | None = None
    for match in _FENCE.finditer(text):
        lang = match.group("lang").lower()
        if lang in _PYTHON_TAGS:
            return match.group("body")
        if not lang and untagged is None:
            untagged = match.group("body")
    return untagged


def reply_text(completion: Any) -> str:
    """The text of a ``complete()`` result: its ``.text``, or the value itself when it is a str."""
    text = getattr(completion, "text", completion)
    return text if isinstance(text, str) else str(text)


def reply_usage(completion: Any) -> dict[str, int]:
    """Token counts a completion reports (``.usage``, or ``.raw["usage"]``); {} when none."""
    usage = getattr(completion, "usage", None)
    if not isinstance(usage, dict):
        raw = getattr(completion, "raw", None)
        usage = raw.get("usage") if isinstance(raw, dict) else None
    if not isinstance(usage, dict):
        return {}
    return {key: value for key, value in usage.items() if isinstance(value, int)}


def reply_model(completion: Any) -> str | None:
    """The model that answered, as the client says (``.model``, or ``.raw["model"]``); None if unsaid."""
    model = getattr(completion, "model", None)
    if not isinstance(model, str):
        raw = getattr(completion, "raw", None)
        model = raw.get("model") if isinstance(raw, dict) else None
    return model if isinstance(model, str) and model else None


def reply_cost(completion: Any) -> float | None:
    """What the call cost in USD, when the client priced it (``.cost``); None otherwise."""
    cost = getattr(completion, "cost", None)
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
