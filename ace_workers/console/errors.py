"""Errors of the console: settings it refuses to start with, and requests it refuses."""

from __future__ import annotations

from ..errors import AceError, SettingsError

__all__ = [
    "ConsoleSettingError",
    "ConsoleRequestError",
    "NotFoundError",
    "BadRequestError",
    "ForbiddenError",
    "ConflictError",
]


class ConsoleSettingError(SettingsError):
    """The console's settings (credentials, address) do not let it start; nothing was served."""


class ConsoleRequestError(AceError):
    """A console request was refused; ``status`` is the HTTP status it answers with."""

    status = 400
    kind = "bad_request"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class BadRequestError(ConsoleRequestError):
    """A parameter of the request is missing or malformed (the message names it)."""


class NotFoundError(ConsoleRequestError):
    """What the URL names does not exist (a skillbook, skill, batch, proposal...)."""

    status = 404
    kind = "not_found"


class ForbiddenError(ConsoleRequestError):
    """The request may not change anything: read-only mode, or a missing or wrong CSRF token."""

    status = 403
    kind = "forbidden"


class ConflictError(ConsoleRequestError):
    """What a confirmation page showed is no longer so (the head or a label moved): nothing was changed."""

    status = 409
    kind = "conflict"
