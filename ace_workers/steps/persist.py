"""PersistStep: write the skillbook to a target file after every sample."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..core.context import ACEStepContext
from ..core.files import write_text_atomically
from ..core.writable import WritableSkillbook

__all__ = ["PersistStep"]


class PersistStep:
    """Write the skillbook to ``target_path`` atomically on every sample.

    JSON (the skillbook file format) by default; pass ``render`` to write
    another format an integration expects, e.g. a CLAUDE.md section.
    """

    requires = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()
    max_workers = 1
    exclusive = True  # writes a file: calls never overlap
    writes_skillbook = True

    def __init__(
        self,
        target_path: str | os.PathLike[str],
        skillbook: WritableSkillbook,
        *,
        render: Callable[[WritableSkillbook], str] | None = None,
    ) -> None:
        if render is not None and not callable(render):
            raise TypeError(f"render must be a callable taking the skillbook, got {render!r}")
        self.target_path = Path(target_path)
        self.skillbook = skillbook
        self.render = render

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        if self.render is None:
            self.skillbook.save_to_file(self.target_path)
        else:
            write_text_atomically(self.target_path, self.render(self.skillbook))
        return ctx

    def __repr__(self) -> str:
        return f"PersistStep({str(self.target_path)!r})"
