"""LoadTracesStep: read a JSONL trace file into a list of event dicts."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

from ..core.context import ACEStepContext
from ..core.jsonl import read_jsonl_objects
from ._checks import MissingFieldError

__all__ = ["LoadTracesStep"]

logger = logging.getLogger(__name__)


class LoadTracesStep:
    """Provide ``trace``: one dict per JSON-object line of the file named by ``ctx.sample``.

    ``ctx.sample`` is a path (str or PathLike) or an object with a ``path``
    attribute. Blank lines are ignored. Lines that are not JSON, or are JSON
    but not an object, are skipped and reported in one WARNING naming the
    file and each line number (in :mod:`ace_workers.core.jsonl`'s wording).
    A missing file fails the sample with FileNotFoundError naming the path.
    """

    requires = frozenset({"sample"})
    provides = frozenset({"trace"})

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        path = _path_of(ctx.sample)
        try:
            events, skipped = read_jsonl_objects(path)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "LoadTracesStep: trace file not found", str(path)) from None
        if skipped:
            logger.warning("LoadTracesStep: %s", skipped.describe())
        return ctx.replace(trace=events)

    def __repr__(self) -> str:
        return "LoadTracesStep()"


def _path_of(sample: object) -> Path:
    if sample is None:
        raise MissingFieldError("LoadTracesStep", "sample")
    target = getattr(sample, "path", sample)
    if isinstance(target, (str, os.PathLike)):
        return Path(target)
    raise TypeError(
        "LoadTracesStep needs ctx.sample to be a path (str or PathLike) or an object with a "
        f"'path' attribute, got {type(sample).__name__}"
    )
