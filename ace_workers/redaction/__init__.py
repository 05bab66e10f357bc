"""Redaction: secrets and personal data replaced by placeholders before a trace is stored or prompted.

``ACE_REDACT`` (fleet-wide) and ``tenant set --redact`` (per tenant) say what is redacted
(:mod:`.spec`); :mod:`.detectors` finds it, :mod:`.redactor` replaces it with placeholders
stable within one trace, and :mod:`.context_redaction` applies that to a step context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .context_redaction import redact_context, redact_in_session
    from .errors import RedactionSpecError
    from .redactor import PLACEHOLDER, RedactionSession, Redactor, redactor_for
    from .spec import DEFAULT_KINDS, KINDS, RedactionSpec, parse_redaction_spec

__all__ = [
    # what to redact
    "DEFAULT_KINDS",
    "KINDS",
    "RedactionSpec",
    "RedactionSpecError",
    "parse_redaction_spec",
    # redacting
    "PLACEHOLDER",
    "RedactionSession",
    "Redactor",
    "redact_context",
    "redact_in_session",
    "redactor_for",
]

__getattr__ = lazy_exports(__name__, __all__, (".spec", ".errors", ".redactor", ".context_redaction"))
