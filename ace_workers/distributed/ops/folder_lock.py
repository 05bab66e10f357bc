"""The lock on a kept embedded Redis folder: one server at a time on its data files.

``redis.lock`` in the folder is held with ``flock`` and records who holds it::

    ace-workers 4242
    redis-server 4243

The lock's file descriptor is also handed to the redis-server, so the lock lasts as long as
either lives: a server still saving after its ace-workers process was killed keeps the folder
locked until it exits. ``flock`` ends with the processes holding it, so a record found on a lock
that could be taken is stale (its holder was killed before it could clear it): it is taken over,
with a warning naming that process.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .errors import EmbeddedRedisBusyError, EmbeddedRedisError

__all__ = ["FolderLock", "LockRecord", "LOCK_FILE"]

logger = logging.getLogger(__name__)

LOCK_FILE = "redis.lock"


@dataclass(frozen=True)
class LockRecord:
    """Who holds (or last held) a folder: the ace-workers process and its redis-server, where known."""

    holder_pid: int | None = None
    server_pid: int | None = None

    @classmethod
    def parse(cls, text: str) -> LockRecord:
        """The pids ``text`` names; a garbled or empty record names none (it is only informative)."""
        holder = re.search(r"^ace-workers (\d+)$", text, re.MULTILINE)
        server = re.search(r"^redis-server (\d+)$", text, re.MULTILINE)
        return cls(int(holder[1]) if holder else None, int(server[1]) if server else None)

    def text(self) -> str:
        lines = [f"ace-workers {self.holder_pid}"]
        lines += [f"redis-server {self.server_pid}"] if self.server_pid is not None else []
        return "\n".join(lines) + "\n"


class FolderLock:
    """The lock on ``directory``, held by this process from :meth:`acquire` to :meth:`release`."""

    def __init__(self, directory: Path, file: IO[bytes]) -> None:
        self.directory = directory
        self._file = file

    @classmethod
    def acquire(cls, directory: Path) -> FolderLock:
        """Create ``directory`` if needed and lock it; EmbeddedRedisBusyError if another process holds it."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            # Never through a symbolic link: the record is written over whatever file it names.
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
            file = os.fdopen(os.open(directory / LOCK_FILE, flags, 0o600), "r+b")
        except OSError as exc:
            raise EmbeddedRedisError(
                f"ACE_EMBEDDED_REDIS_DIR={directory}: cannot use {exc.filename or 'the folder'} "
                f"({exc.strerror or exc})"
            ) from None
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held = _read(file)
            file.close()
            ended = held.holder_pid is not None and not _is_running(held.holder_pid)
            raise EmbeddedRedisBusyError(
                str(directory), held.holder_pid, held.server_pid, holder_ended=ended
            ) from None
        left = _read(file)
        if left.holder_pid is not None:
            logger.warning(
                "the embedded Redis folder %s was left locked by ace-workers process %d, which was "
                "killed before it could release it: taking the folder over",
                directory,
                left.holder_pid,
            )
        lock = cls(directory, file)
        lock.record(None)
        return lock

    def fileno(self) -> int:
        """The lock's file descriptor: a child given it (``pass_fds``) holds the lock while it lives."""
        return self._file.fileno()

    def record(self, server_pid: int | None) -> None:
        """Write this process (and its server's pid, once started) into the lock file."""
        _write(self._file, LockRecord(os.getpid(), server_pid).text())

    def release(self) -> None:
        """Clear the record and unlock (once the server, which shares the lock, has stopped)."""
        if self._file.closed:
            return
        try:
            _write(self._file, "")
        finally:
            self._file.close()


def _read(file: IO[bytes]) -> LockRecord:
    file.seek(0)
    return LockRecord.parse(file.read(200).decode("ascii", errors="replace"))


def _write(file: IO[bytes], text: str) -> None:
    file.seek(0)
    file.truncate()
    file.write(text.encode("ascii"))
    file.flush()


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: running
    return True
