"""Redis replies as Python values, whether the client decodes responses or not."""

from __future__ import annotations

from typing import Any

__all__ = ["decode_int", "decode_text", "optional_text"]


def decode_text(value: bytes | str) -> str:
    """A reply as text."""
    return value.decode() if isinstance(value, bytes) else value


def optional_text(value: bytes | str | None) -> str | None:
    """A reply as text, None staying None."""
    return None if value is None else decode_text(value)


def decode_int(value: Any) -> int:
    """A reply as an int, a missing key (None) counting as 0."""
    return 0 if value is None else int(value)
