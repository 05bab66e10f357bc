"""A small, exact step-pipeline engine: validated contracts, streaming runs, background tails.

Knows nothing about ACE, Celery or Redis; ``ace_workers`` builds on it.
"""

from .branch import Branch, MergeStrategy
from .cancellation import CancellationToken
from .context import StepContext
from .errors import (
    BranchError,
    PipelineCancelled,
    PipelineConfigError,
    PipelineError,
    PipelineOrderError,
)
from .hooks import PipelineHook
from .pipeline import Pipeline
from .protocol import SampleResult, StepProtocol

__all__ = [
    # composing
    "Pipeline",
    "Branch",
    "MergeStrategy",
    # contracts and data
    "StepContext",
    "StepProtocol",
    "SampleResult",
    # observing and controlling runs
    "PipelineHook",
    "CancellationToken",
    # errors
    "PipelineError",
    "PipelineOrderError",
    "PipelineConfigError",
    "BranchError",
    "PipelineCancelled",
]
