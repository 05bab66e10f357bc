"""ace-workers: Agentic Context Engineering as distributed Celery workers on Redis.

The ACE domain (skillbook, roles, steps, runners) and the workers arrive in
later milestones; today the package carries the CLI and a demo of the
pipeline engine it builds on.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ace-workers")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = [
    # package metadata
    "__version__",
]
