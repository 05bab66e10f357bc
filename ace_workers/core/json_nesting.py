"""JSON read with its nesting bounded: a deep document is refused before the parser recurses.

``json.loads`` recurses once per nesting level, so ``[[[...]]]`` a few thousand deep raises
RecursionError (a traceback) from any reader of outside input. One scan of the brackets,
outside strings, finds the depth first; every way in (a skillbook file, the hook's input,
a JSONL line, a request body, an LLM's batch) reads through :func:`loads_bounded`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import JsonNestingError

__all__ = ["MAX_JSON_DEPTH", "check_json_depth", "loads_bounded"]

# Far above any document of ours (a skillbook file nests 5 deep, a transcript line about 10).
MAX_JSON_DEPTH = 200

# A JSON string (an unterminated one runs to the end) or one bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def check_json_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise JsonNestingError if ``text`` nests arrays and objects deeper than ``limit``.

    Linear in ``text``; stops at the first bracket past the limit.
    """
    # Latin-1 maps each byte to one character: brackets and quotes stay where they were.
    scanned = text.decode("latin-1") if isinstance(text, bytes) else text
    depth = 0
    for match in _TOKEN.finditer(scanned):
        first = scanned[match.start()]
        if first in "[{":
            depth += 1
            if depth > limit:
                raise JsonNestingError(limit, match.start())
        elif first != '"':
            depth -= 1


def loads_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)`` once :func:`check_json_depth` passed.

    Raises:
        JsonNestingError: too deep (a ValueError, as JSONDecodeError is).
        ValueError: not JSON (JSONDecodeError, UnicodeDecodeError).
    """
    check_json_depth(text, limit)
    return json.loads(text)
