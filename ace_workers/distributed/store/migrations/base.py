"""What a migration is: a numbered, described, resumable upgrade of the data under one prefix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import redis

__all__ = ["Changes", "Migration", "Progress"]

# What a migration changes (or would), by what it is, as counts: {"skillbooks given their count": 3}.
Changes = dict[str, int]
# Called by apply() after each unit of work with how many units it did so far (the runner reports
# every so many, and keeps its lock meanwhile).
Progress = Callable[[int], None]


class Migration(Protocol):
    """One step from schema ``number - 1`` to schema ``number``.

    ``plan`` only reads; ``apply`` changes what ``plan`` counts, one unit at a time, each unit
    in a transaction of its own and skipped when already done: interrupted, it is run again.
    """

    @property
    def number(self) -> int:
        """The schema the data has once this migration ran."""
        ...

    @property
    def description(self) -> str:
        """What it changes, in one line."""
        ...

    @property
    def fleet_may_run(self) -> bool:
        """True if workers (of the old version or the new) may run meanwhile; else they must be stopped."""
        ...

    def plan(self, client: redis.Redis, prefix: str) -> Changes:
        """What ``apply`` would change now, counted; reads only."""
        ...

    def apply(self, client: redis.Redis, prefix: str, progress: Progress) -> Changes:
        """Change it; what was changed, counted (0 for units found done already)."""
        ...
