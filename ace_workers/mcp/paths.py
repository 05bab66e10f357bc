"""Confining ace.skillbook.save/load to one directory."""

from __future__ import annotations

from pathlib import Path

from .errors import PathNotAllowedError

__all__ = ["path_in_directory"]


def path_in_directory(directory: Path, requested: str) -> Path:
    """The file ``requested`` names inside ``directory``; PathNotAllowedError when it leaves it.

    The path is resolved (``..`` and symlinks followed) before the check, so
    neither ``../x.json`` nor a link pointing out of the directory gets through.
    Only ``.json`` files: a client cannot overwrite anything else that lives there.
    """
    if "\x00" in requested:
        raise PathNotAllowedError(f"path {requested!r} holds a NUL byte")
    candidate = (directory / requested).resolve()
    if not candidate.is_relative_to(directory):
        raise PathNotAllowedError(
            f"path {requested!r} is outside the skillbook directory {str(directory)!r} "
            "(ACE_MCP_SKILLBOOK_DIR); give a file name inside it"
        )
    if candidate.suffix != ".json":
        raise PathNotAllowedError(f"path {requested!r} is not a .json file")
    return candidate
