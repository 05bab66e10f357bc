"""Redis replies as Python values, whether the client decodes responses or not.

The one place where what Redis holds becomes a value: a reply that is not what
the store wrote (not JSON, not a number, a key of the wrong type) raises
CorruptDataError naming the key and what is wrong, never a bare ValueError or
a ResponseError from deep inside a read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis
from redis.client import Pipeline

from .errors import CorruptDataError

__all__ = [
    "STREAM_PAGE",
    "checked_reads",
    "decode_int",
    "decode_json",
    "decode_text",
    "execute_reads",
    "optional_text",
    "reading",
    "stream_newest_first",
]

_WRONG_TYPE = "WRONGTYPE"
_SHOWN_CHARS = 40  # of a corrupt value, in the error: enough to recognise it
# Stream entries per XREVRANGE: one read of 10,000 change-log entries with their skill images
# blocks Redis (and outlasts a client's socket timeout); pages leave room for other commands.
STREAM_PAGE = 500


def stream_newest_first(
    client: redis.Redis, key: str, *, newest: str = "+", page: int = STREAM_PAGE
) -> Iterator[tuple[Any, Any]]:
    """The entries ``(id, fields)`` of stream ``key`` from ``newest`` back, read ``page`` at a time.

    Lazy: a caller that stops early reads no further page.
    """
    while True:
        with reading(key):
            entries = client.xrevrange(key, max=newest, count=page) or []
        yield from entries
        if len(entries) < page:
            return
        newest = "(" + str(optional_text(entries[-1][0]))


def decode_text(value: bytes | str) -> str:
    """A reply as text."""
    return value.decode() if isinstance(value, bytes) else value


def optional_text(value: bytes | str | None) -> str | None:
    """A reply as text, None staying None."""
    return None if value is None else decode_text(value)


def decode_int(value: Any, key: str | None = None) -> int:
    """A reply as an int, a missing key (None) counting as 0; CorruptDataError if it is not a whole number."""
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        raise CorruptDataError(key or "(a counter)", f"holds {_shown(value)}, not a whole number") from None


def decode_json(value: bytes | str, key: str, field: str | None = None) -> Any:
    """A reply holding JSON (``field`` of the hash ``key``, or ``key`` itself) as its value."""
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        where = f"field {field!r} " if field is not None else ""
        raise CorruptDataError(key, f"{where}holds {_shown(value)}, not JSON ({exc})") from None


def execute_reads(pipe: Pipeline, keys: Sequence[str]) -> list[Any]:
    """Run ``pipe``'s queued reads, the i-th of ``keys[i]``; a key of the wrong type is a CorruptDataError."""
    return checked_reads(pipe.execute(raise_on_error=False), keys)


def checked_reads(replies: Sequence[Any], keys: Sequence[str]) -> list[Any]:
    """Replies of reads, the i-th of ``keys[i]``, as a pipeline run without raising gave them: an
    error among them raised (a key of the wrong type as a CorruptDataError naming it)."""
    for reply, key in zip(replies, keys, strict=True):
        if isinstance(reply, redis.ResponseError):
            raise _wrong_type(key, reply) or reply
        if isinstance(reply, Exception):
            raise reply
    return list(replies)


@contextmanager
def reading(key: str) -> Iterator[None]:
    """Around one command reading ``key``: a key of the wrong type becomes a CorruptDataError naming it."""
    try:
        yield
    except redis.ResponseError as exc:
        corrupt = _wrong_type(key, exc)
        if corrupt is None:
            raise
        raise corrupt from exc


def _wrong_type(key: str, error: redis.ResponseError) -> CorruptDataError | None:
    """The CorruptDataError of a WRONGTYPE reply; None for any other error (out of memory, ...)."""
    if not str(error).startswith(_WRONG_TYPE):
        return None
    return CorruptDataError(key, "is of the wrong type for this read (WRONGTYPE): something else wrote it")


def _shown(value: object) -> str:
    text = decode_text(value) if isinstance(value, bytes | str) else str(value)
    return repr(text[:_SHOWN_CHARS] + ("..." if len(text) > _SHOWN_CHARS else ""))
