"""Confining ace.skillbook.save/load to one directory; a save creates no folder and replaces no
file unless asked."""

from __future__ import annotations

from pathlib import Path

from .errors import PathNotAllowedError, SaveTargetExistsError

__all__ = ["path_in_directory", "writable_path"]


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


def writable_path(directory: Path, requested: str, *, overwrite: bool) -> Path:
    """The file a save may write: :func:`path_in_directory`, in a folder that exists already (the
    skillbook directory itself is made if missing), and not a file there already unless
    ``overwrite`` (the caller says it means to replace it).

    Raises:
        PathNotAllowedError: the path leaves ``directory``, is no .json file, or its folder is missing.
        SaveTargetExistsError: the file exists and ``overwrite`` is False; nothing was written.
    """
    path = path_in_directory(directory, requested)
    if path.parent == directory:
        directory.mkdir(parents=True, exist_ok=True)  # the one the operator configured, never one below
    if not path.parent.is_dir():
        raise PathNotAllowedError(
            f"path {requested!r}: its folder does not exist in the skillbook directory; "
            "ace.skillbook.save creates no folders"
        )
    if path.exists() and not overwrite:
        raise SaveTargetExistsError(
            f"path {requested!r} exists already: nothing written (pass overwrite=true to replace it)"
        )
    return path
