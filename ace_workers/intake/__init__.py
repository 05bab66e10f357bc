"""Intake: an HTTP front door where producers send traces with an API key, not the fleet's Redis URL."""

from .endpoints import IDEMPOTENCY_HEADER, build_intake_app

__all__ = ["IDEMPOTENCY_HEADER", "build_intake_app"]
