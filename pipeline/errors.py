"""Exceptions raised by the pipeline engine.

Every exception derives from :class:`PipelineError`, so callers can catch the
engine's own failures in one place without swallowing the errors of steps.
"""

from __future__ import annotations

__all__ = [
    "BranchError",
    "PipelineCancelled",
    "PipelineConfigError",
    "PipelineError",
    "PipelineOrderError",
]


class PipelineError(Exception):
    """Root of every error the pipeline engine raises itself."""


class PipelineOrderError(PipelineError):
    """A step requires a field that only a later step provides."""

    def __init__(self, field: str, step: str, provider: str) -> None:
        self.field = field
        self.step = step
        self.provider = provider
        super().__init__(
            f"step {step} requires field {field!r}, but it is only provided by "
            f"{provider}, which runs later; move {provider} before {step}"
        )


class PipelineConfigError(PipelineError):
    """The pipeline is wired in a way the engine cannot run."""


class BranchError(PipelineError):
    """One or more children of a Branch failed; carries every failure."""

    def __init__(self, failures: list[BaseException]) -> None:
        self.failures = list(failures)
        details = "; ".join(f"{type(e).__name__}: {e}" for e in self.failures)
        super().__init__(f"{len(self.failures)} branch(es) failed: {details}")


class PipelineCancelled(PipelineError):
    """The sample was cancelled through its CancellationToken before a step ran."""

    def __init__(self, step: str, reason: str | None = None) -> None:
        self.step = step
        self.reason = reason
        suffix = f": {reason}" if reason else ""
        super().__init__(f"cancelled before step {step}{suffix}")
