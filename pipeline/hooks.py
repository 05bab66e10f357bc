"""Observation hooks called around every step."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["PipelineHook", "call_hooks"]

logger = logging.getLogger(__name__)


class PipelineHook:
    """Base class for observers: override any of the methods, all default to no-ops.

    Hooks observe and never steer: what they return is ignored, and an
    exception raised by a hook is logged and never fails the sample.

    A sample run by ``Pipeline.run`` (or ``stream``, ``run_async``, ``astream``)
    runs in a copy of the caller's :mod:`contextvars` context, carried into its
    background tail: a ContextVar a hook sets in :meth:`before_sample` is seen
    by that sample's steps, its other hook calls and :meth:`after_sample`,
    and by no other sample.
    """

    def before_sample(self, ctx: Any) -> None:
        """Called when a sample enters ``run``/``stream``, before its first step (not for a nested call)."""

    def after_sample(self, result: Any) -> None:
        """Called once the sample finished for good, with its SampleResult, before ``done`` turns True."""

    def before_step(self, name: str, ctx: Any) -> None:
        """Called before step ``name`` runs on ``ctx``."""

    def after_step(self, name: str, ctx: Any) -> None:
        """Called with the context step ``name`` returned."""

    def on_error(self, name: str, ctx: Any, error: BaseException) -> None:
        """Called when step ``name`` raised ``error`` on ``ctx``."""


def call_hooks(hooks: list[PipelineHook], method: str, *args: Any) -> None:
    """Call ``method`` on every hook; a hook that raises is logged and skipped."""
    for hook in hooks:
        try:
            getattr(hook, method)(*args)
        except Exception:
            logger.exception("pipeline hook %r failed in %s; the sample goes on", hook, method)
