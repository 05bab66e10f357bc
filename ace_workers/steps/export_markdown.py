"""ExportSkillbookMarkdownStep: keep a human-readable markdown copy of the skillbook."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.context import ACEStepContext
from ..core.files import write_text_atomically
from ..core.writable import WritableSkillbook

__all__ = ["ExportSkillbookMarkdownStep"]


class ExportSkillbookMarkdownStep:
    """Rewrite the markdown file at ``path`` from the skillbook, atomically, on every sample."""

    requires = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()
    max_workers = 1
    exclusive = True  # writes a file: calls never overlap
    writes_skillbook = True

    def __init__(self, path: str | os.PathLike[str], skillbook: WritableSkillbook) -> None:
        self.path = Path(path)
        self.skillbook = skillbook

    def __call__(self, ctx: ACEStepContext) -> ACEStepContext:
        write_text_atomically(self.path, self.skillbook.as_markdown())
        return ctx

    def __repr__(self) -> str:
        return f"ExportSkillbookMarkdownStep({str(self.path)!r})"
