"""Over stdio, a line that is not a JSON-RPC message gets JSON-RPC's error reply, and serving goes on.

The SDK's stdio reader hands such a line to the server as an exception, which the
server drops: a client that sent garbage would wait for an answer forever. Between
the two, :class:`AnswerMalformedInput` answers it: -32700 (parse error) when the
line is not JSON (invalid UTF-8 arrives as replacement characters, so it lands
here too; so does nesting deeper than the parser allows), -32600 (invalid request)
when it is JSON but no JSON-RPC message (an array, a number, an object without
``method``). The id is null: a line that does not parse has none to echo.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["AnswerMalformedInput", "error_reply"]

logger = logging.getLogger(__name__)
# The JSON parser's verdicts on text that is not JSON at all (as opposed to a wrong shape).
_NOT_JSON = frozenset({"json_invalid", "json_type"})


def error_reply(problem: Exception) -> types.JSONRPCError:
    """JSON-RPC's answer to a line the SDK could not read as a message: parse error or invalid request."""
    not_json = isinstance(problem, ValidationError) and any(e["type"] in _NOT_JSON for e in problem.errors())
    if not_json:
        assert isinstance(problem, ValidationError)
        detail = problem.errors()[0]["msg"]
        error = types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: not JSON ({detail})")
    else:
        error = types.ErrorData(
            code=types.INVALID_REQUEST,
            message="Invalid Request: not a JSON-RPC 2.0 message (one object with jsonrpc, method, id)",
        )
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)


class AnswerMalformedInput:
    """The stdio read stream less its unreadable lines: each is answered on ``write_stream`` instead."""

    def __init__(self, read_stream: Any, write_stream: Any) -> None:
        self._read = read_stream
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        """The sender context of the last message, as the SDK's own stream offers it."""
        return getattr(self._read, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            logger.info("answered an unreadable stdio line: %s", type(item).__name__)
            await self._write.send(SessionMessage(error_reply(item)))

    def close(self) -> None:
        self._read.close()

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> AnswerMalformedInput:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnswerMalformedInput:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
