"""The errors of redaction: a configuration (``ACE_REDACT``, ``tenant set --redact``) that does not parse."""

from __future__ import annotations

from ..errors import AceError

__all__ = ["RedactionSpecError"]


class RedactionSpecError(AceError, ValueError):
    """A redaction setting has a bad entry; ``entry`` is that entry as written, ``reason`` what is wrong."""

    def __init__(self, entry: str, reason: str) -> None:
        self.entry = entry
        self.reason = reason
        super().__init__(f"entry {entry!r}: {reason}")
