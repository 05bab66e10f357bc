"""CheckpointStep: every ``interval`` samples, save the skillbook to a checkpoint directory."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..core.context import ACEStepContext
from ..core.files import write_text_atomically
from ..core.writable import WritableSkillbook
from ._checks import check_interval, is_due

__all__ = ["CheckpointStep"]

logger = logging.getLogger(__name__)


class CheckpointStep:
    """Write ``checkpoint_{global_sample_index}.json`` and ``latest.json`` on every ``interval``-th sample.

    Both files are written atomically (``Skillbook.save_to_file``): a crash
    or a failed write leaves the previous file as it was.
    """

    requires = frozenset({"global_sample_index"})
    provides: frozenset[str] = frozenset()
    max_workers = 1
    exclusive = True  # writes a file: calls never overlap
    writes_skillbook = True

    def __init__(
        self, directory: str | os.PathLike[str], skillbook: WritableSkillbook, *, interval: int = 10
    ) -> None:
        if not os.fspath(directory):
            raise ValueError("CheckpointStep needs a directory, got an empty path")
        self.directory = Path(directory)
        self.skillbook = skillbook
        self.interval = check_interval(interval)

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        if not is_due(ctx.global_sample_index, self.interval):
            return ctx
        checkpoint = self.directory / f"checkpoint_{ctx.global_sample_index}.json"
        # Serialise once, so the checkpoint and latest.json hold the same state.
        text = self.skillbook.dumps()
        write_text_atomically(checkpoint, text)
        write_text_atomically(self.directory / "latest.json", text)
        logger.info("CheckpointStep: saved %s", checkpoint)
        return ctx

    def __repr__(self) -> str:
        return f"CheckpointStep({str(self.directory)!r}, interval={self.interval})"
