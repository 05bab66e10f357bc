"""Cooperative cancellation of the samples of a run."""

from __future__ import annotations

import threading

from .errors import PipelineCancelled

__all__ = ["CancellationToken"]


class CancellationToken:
    """A flag checked before every step; once set, remaining steps do not run.

    Thread-safe: cancel from any thread. Samples that had not finished end
    with :class:`PipelineCancelled` in ``SampleResult.error``.
    """

    __slots__ = ("_event", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def cancel(self, reason: str | None = None) -> None:
        """Request cancellation; idempotent, the first reason is kept."""
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` has been called."""
        return self._event.is_set()

    def raise_if_cancelled(self, step: str) -> None:
        """Raise :class:`PipelineCancelled` naming ``step`` if cancelled."""
        if self._event.is_set():
            raise PipelineCancelled(step, self.reason)
