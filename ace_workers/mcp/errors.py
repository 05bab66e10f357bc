"""Errors of the MCP tools, each with the JSON-RPC error code a client receives.

A handler raises one of these; the server turns it into an MCP error whose
message names the problem and whose data carries ``kind`` (a stable string a
client can branch on) and the tool's name.
"""

from __future__ import annotations

from ..errors import AceError, SettingsError

__all__ = [
    "MCPToolError",
    "InvalidToolRequest",
    "UnknownSessionError",
    "ReadOnlyError",
    "LabelWriteError",
    "PathNotAllowedError",
    "SaveTargetExistsError",
    "BackendError",
    "SessionNotYoursError",
    "HTTPAuthSettingError",
    "ScopeRefusedError",
    "OperationRefusedError",
    "INVALID_PARAMS",
]

INVALID_PARAMS = -32602  # JSON-RPC: the arguments do not fit the tool's schema or limits
# Codes -32000..-32099 are the JSON-RPC range a server defines for itself.
_UNKNOWN_SESSION = -32001
_READ_ONLY = -32002
_PATH_NOT_ALLOWED = -32003
_BACKEND = -32004
_SESSION_NOT_YOURS = -32005
_SCOPE_REFUSED = -32007


class MCPToolError(AceError):
    """An MCP tool call was refused or failed; nothing was changed."""

    code = INVALID_PARAMS
    kind = "invalid_request"


class InvalidToolRequest(MCPToolError):
    """The arguments break the tool's schema or the server's size limits."""


class UnknownSessionError(MCPToolError):
    """The session does not exist, or it expired."""

    code = _UNKNOWN_SESSION
    kind = "unknown_session"


class ReadOnlyError(MCPToolError):
    """The server runs read-only and the tool would change the skillbook."""

    code = _READ_ONLY
    kind = "read_only"


class LabelWriteError(MCPToolError):
    """The server serves a labelled version (``NAME@LABEL``): a label is read, never written."""

    code = _READ_ONLY
    kind = "label_read_only"


class PathNotAllowedError(MCPToolError):
    """A save or load path lies outside the configured skillbook directory, or is not a .json file."""

    code = _PATH_NOT_ALLOWED
    kind = "path_not_allowed"


class SaveTargetExistsError(MCPToolError):
    """ace.skillbook.save names a file that exists already and was not told to overwrite it."""

    code = _PATH_NOT_ALLOWED
    kind = "file_exists"


class BackendError(MCPToolError):
    """The back end (LLM, Redis, the workers) failed while serving the call."""

    code = _BACKEND
    kind = "backend_error"


class SessionNotYoursError(MCPToolError):
    """The session was opened by another connection; its data stays with that connection."""

    code = _SESSION_NOT_YOURS
    kind = "session_not_yours"


class ScopeRefusedError(MCPToolError):
    """The caller's API key does not reach this skillbook, or its role is below what the tool needs."""

    code = _SCOPE_REFUSED
    kind = "forbidden"


class OperationRefusedError(MCPToolError):
    """An operation of the fleet refused or failed; code and kind are its class's row of the
    operations' table (:func:`~ace_workers.operations.outcome_of`), as every front end answers it."""

    def __init__(self, message: str, code: int, kind: str) -> None:
        super().__init__(message)
        self.code = code
        self.kind = kind


class HTTPAuthSettingError(SettingsError):
    """The HTTP server may not run as asked: ``--no-auth`` off loopback, or no fleet to hold API keys."""
