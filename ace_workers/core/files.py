"""Writing files so that a crash never leaves a half-written one, and only ever regular files."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from ..errors import NotARegularFileError

__all__ = ["NEW_FILE_MODE", "check_regular_file", "special_file_kind", "write_text_atomically"]

NEW_FILE_MODE = 0o644

# What a path is when it is not a regular file, in the words of an error message.
_SPECIAL_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_file_kind(path: Path) -> str | None:
    """What ``path`` (through any symlinks) is when it exists and is not a regular file; else None."""
    try:
        mode = path.stat().st_mode
    except OSError:  # missing (or a dangling link): a new file is created there
        return None
    for test, kind in _SPECIAL_KINDS:
        if test(mode):
            return kind
    return None


def check_regular_file(path: Path) -> None:
    """Raise NotARegularFileError naming ``path`` and what it is, unless it is a regular file or absent."""
    kind = special_file_kind(path)
    if kind is not None:
        raise NotARegularFileError(path, kind)


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``.

    Raises:
        NotARegularFileError: ``path`` is a FIFO, a device, a socket or a folder (or a link
            to one): renaming over it would replace, say, /dev/null with a regular file.
    """
    check_regular_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates 0600 files; keep the mode the file had, or the usual 0644 for a new one.
    mode = path.stat().st_mode & 0o777 if path.exists() else NEW_FILE_MODE
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as temp:
            temp.write(text)
            temp.flush()
            os.fchmod(temp.fileno(), mode)
            os.fsync(temp.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable across a power loss, where the platform allows it.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
