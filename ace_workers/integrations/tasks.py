"""The task an external agent is given: a string, or an object with a ``question`` (a Sample)."""

from __future__ import annotations

from typing import Any

__all__ = ["task_text"]


def task_text(sample: Any, where: str) -> str:
    """``sample`` as a task string; TypeError naming ``where`` for anything else."""
    if isinstance(sample, str):
        return sample
    question = getattr(sample, "question", None)
    if isinstance(question, str):
        return question
    raise TypeError(
        f"{where} needs ctx.sample to be a task string or an object with a 'question', "
        f"got {type(sample).__name__}"
    )
