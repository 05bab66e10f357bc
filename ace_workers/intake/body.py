"""The body of ``POST /v1/traces``: a JSON array of trace objects, or JSON Lines, one object a line."""

from __future__ import annotations

from typing import Any

from ..core.json_nesting import loads_bounded
from ..errors import JsonNestingError
from ..operations.errors import IntakeBodyError

__all__ = ["read_traces"]


def read_traces(body: bytes) -> list[dict[str, Any]]:
    """The traces of ``body``: a JSON array if it starts with ``[``, else one JSON object a line.

    Raises:
        IntakeBodyError: naming the line (JSON Lines) or the trace (an array) that is not a JSON
            object, too deep, or not JSON at all.
    """
    text = _text(body)
    if text.lstrip().startswith("["):
        items = _parse(text, "body")
        return [_object(item, f"trace {number}") for number, item in enumerate(items, start=1)]
    traces = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():  # blank lines separate nothing: skipped, as JSONL readers do
            traces.append(_object(_parse(line, f"line {number}"), f"line {number}"))
    return traces


def _text(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IntakeBodyError("body", f"not UTF-8 (byte {exc.start})") from None


def _parse(text: str, where: str) -> Any:
    try:
        return loads_bounded(text)
    except JsonNestingError as exc:
        raise IntakeBodyError(where, str(exc)) from None
    except ValueError as exc:  # JSONDecodeError
        raise IntakeBodyError(where, f"not JSON: {exc}") from None


def _object(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise IntakeBodyError(where, f"a trace must be a JSON object, not {type(item).__name__}")
    return item
