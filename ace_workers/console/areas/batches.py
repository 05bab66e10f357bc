"""The console's batches area (being built)."""

from __future__ import annotations

from starlette.routing import BaseRoute

__all__ = ["ROUTES"]

ROUTES: list[BaseRoute] = []
