"""The per-skillbook inbox: traces appended now, learned by the next nightly run."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import redis

from ...redaction.redactor import Redactor
from ..store.keys import INBOX_TRACE_FIELD, SkillbookKeys
from ..worker.errors import PayloadError
from ..worker.payload import check_trace

__all__ = ["append_to_inbox"]

_CHUNK = 500  # entries per round trip


def append_to_inbox(
    client: redis.Redis,
    keys: SkillbookKeys,
    traces: Iterable[Any],
    *,
    max_trace_bytes: int,
    redactor: Redactor,
) -> int:
    """Append traces to the skillbook's inbox for the next nightly run; return how many.

    Every trace is checked first (JSON-serialisable, within ``max_trace_bytes``):
    a bad one raises, naming its position, and nothing of the call is appended.
    Each is kept as ``redactor`` leaves it: nothing it finds is stored.
    """
    lines = []
    for position, trace in enumerate(traces, start=1):
        try:
            check_trace(trace, max_bytes=max_trace_bytes)
        except PayloadError as exc:
            exc.args = (f"trace {position}: {exc}",)  # same error, now saying which trace
            raise
        lines.append(json.dumps(redactor.json(trace), ensure_ascii=False))
    for start in range(0, len(lines), _CHUNK):
        pipe = client.pipeline(transaction=False)
        for line in lines[start : start + _CHUNK]:
            pipe.xadd(keys.inbox, {INBOX_TRACE_FIELD: line})
        pipe.execute()
    return len(lines)
