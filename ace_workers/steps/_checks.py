"""Checks shared by the steps: run-time context fields and construction-time intervals."""

from __future__ import annotations

from typing import TypeVar

from ..core.context import ACESample
from ..errors import MissingFieldError

__all__ = ["MissingFieldError", "check_interval", "is_due", "require_field", "require_sample"]

T = TypeVar("T")


def require_field(value: T | None, step: str, field: str) -> T:
    """Return ``value``; raise MissingFieldError naming ``step`` and ``field`` when it is None."""
    if value is None:
        raise MissingFieldError(step, field)
    return value


def require_sample(sample: object, step: str) -> ACESample:
    """Return ``ctx.sample`` as an ACESample (question, context, ground_truth, metadata)."""
    if sample is None:
        raise MissingFieldError(step, "sample")
    if not isinstance(sample, ACESample):
        raise TypeError(
            f"{step} needs ctx.sample with question, context, ground_truth and metadata "
            f"(e.g. a Sample), got {type(sample).__name__}"
        )
    return sample


def is_due(global_sample_index: int, interval: int) -> bool:
    """True on every ``interval``-th sample; runners count from 1, and 0 (unset) is never due."""
    return global_sample_index > 0 and global_sample_index % interval == 0


def check_interval(value: int, name: str = "interval") -> int:
    """Return ``value`` if it is an int of at least 1; raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value
