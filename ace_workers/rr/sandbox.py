"""A process sandbox for the Python code the Recursive Reflector's LLM writes.

Each :meth:`Sandbox.run` starts a fresh interpreter (``python -I -S``, no
environment variables, so no API key leaks into it) in a new session, in a
fresh temporary directory that is deleted afterwards. With
``Isolation.OS`` (the default) it starts behind the OS boundary of
:mod:`ace_workers.rr.boundary`: bubblewrap namespaces (no network, no host
files but the interpreter's, read-only), uid 65534 and a seccomp filter
against new processes, programs and sockets. Where that boundary cannot be
set up, a Sandbox refuses to be built (:class:`SandboxUnavailableError`)
unless ``Isolation.OS_OR_GUARDS`` allows the in-process guards alone.

The child script (:mod:`ace_workers.rr.sandbox_child`) drops to the sandbox
uid, lowers its own resource limits with ``resource.setrlimit`` -- address
space, CPU seconds, file size, open files, processes, no core dumps -- loads
the seccomp filter and installs in-process guards before the code runs:
sockets raise ``PermissionError("network access is disabled in the
sandbox")``, process creation and ``ctypes``/``subprocess`` imports are
refused, and any file path that resolves outside the working directory is
refused. The guards are a second layer, not the boundary: code can dig
through ``object.__subclasses__()`` to the unguarded originals, and then
meets the kernel's refusals. The parent enforces the wall-clock timeout and
kills the child's whole process group (and, through bwrap's PID namespace,
everything the run started) when it expires. Nothing here uses signals or
``preexec_fn``, so many threads (Celery worker threads) may run code at once.

The trace goes in as JSON (``input.json``); the result comes back in
``result.json``, written by the child through a file handle it opened before
the code ran, while the code's stdout and stderr go to files of their own:
printing cannot forge a result.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Final

from ..counts import counted
from ..errors import SandboxUnavailableError
from .boundary import SANDBOX_UID, OSBoundary, find_boundary

__all__ = [
    "KILLED_CPU",
    "KILLED_MEMORY",
    "KILLED_TIMEOUT",
    "Isolation",
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
]

logger = logging.getLogger(__name__)

KILLED_TIMEOUT: Final = "timeout"
KILLED_MEMORY: Final = "memory"
KILLED_CPU: Final = "cpu"

CHILD_SCRIPT: Final = str(Path(__file__).with_name("sandbox_child.py"))
# Nothing of the worker's environment (API keys, Redis URLs) reaches the code.
CHILD_ENV: Final = {"LC_ALL": "C.UTF-8"}
# What a child killed for lack of memory leaves on stderr when it could not raise MemoryError.
_MEMORY_MARKERS: Final = ("MemoryError", "Cannot allocate memory", "out of memory")
_BYTES_PER_CHAR: Final = 4  # the most UTF-8 needs for one character
# bwrap exits with 128 + the signal number when the child it started was killed by a signal.
_BWRAP_SIGNAL_BASE: Final = 128


class Isolation(str, Enum):
    """What stands between the code and the host."""

    OS = "os"  # the OS boundary, or no sandbox at all (SandboxUnavailableError)
    OS_OR_GUARDS = "os-or-guards"  # the OS boundary where it can be set up, else the guards alone
    GUARDS = "guards"  # the in-process guards alone (no boundary: for comparison and tests)


@dataclass(frozen=True)
class SandboxLimits:
    """What one run may use.

    Args:
        timeout_s: Wall-clock seconds before the parent kills the run.
        memory_mb: Address space (RLIMIT_AS) of the child, interpreter included.
        cpu_s: CPU seconds (RLIMIT_CPU); defaults to the timeout rounded up,
            plus one second.
        max_output_chars: Characters of stdout and of stderr kept, each.
        file_size_mb: Largest file the child may write (RLIMIT_FSIZE).
        open_files: Open file descriptors allowed (RLIMIT_NOFILE).
    """

    timeout_s: float = 10.0
    memory_mb: int = 512
    cpu_s: int | None = None
    max_output_chars: int = 10_000
    file_size_mb: int = 16
    open_files: int = 64

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        # Below this the interpreter itself does not start.
        if self.memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64, got {self.memory_mb}")
        for name in ("cpu_s", "max_output_chars", "file_size_mb", "open_files"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.open_files < 16:
            raise ValueError(f"open_files must be >= 16, got {self.open_files}")

    @property
    def effective_cpu_s(self) -> int:
        """The CPU limit: ``cpu_s``, or the timeout rounded up plus one second.

        The default is a backstop for a parent that cannot kill the child: one
        second beyond the wall clock, so a busy loop is stopped by the timeout
        even when the parent's wait wakes late on a loaded machine.
        """
        return self.cpu_s if self.cpu_s is not None else int(-(-self.timeout_s // 1)) + 1

    def for_child(self) -> dict[str, int]:
        """The limits as the child script reads them."""
        return {
            "memory_mb": self.memory_mb,
            "cpu_s": self.effective_cpu_s,
            "max_output_chars": self.max_output_chars,
            "file_size_bytes": self.file_size_mb * 1024 * 1024,
            "open_files": self.open_files,
        }


@dataclass(frozen=True)
class SandboxResult:
    """What one run did.

    ``killed`` is why the run was stopped by a limit: ``"timeout"`` (wall
    clock), ``"memory"`` or ``"cpu"``; None when it ended by itself.
    ``error`` is ``"ExceptionType: message"`` when the code raised or was
    stopped; None when it ran to its end (or to FINAL).
    """

    stdout: str
    stderr: str
    final_called: bool
    final_value: Any
    error: str | None
    killed: str | None
    duration_s: float
    exit_code: int | None

    @property
    def ok(self) -> bool:
        """True if the code ran without error and within its limits."""
        return self.error is None and self.killed is None

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict."""
        return asdict(self)


class Sandbox:
    """Runs Python code in a fresh, limited, guarded child process, behind the OS boundary; thread-safe."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        python: str | None = None,
        isolation: Isolation = Isolation.OS,
    ) -> None:
        """Raises SandboxUnavailableError if ``isolation`` is OS and the boundary cannot be set up here."""
        self.limits = limits or SandboxLimits()
        self.python = python or sys.executable
        self.boundary: OSBoundary | None = None
        if isolation is not Isolation.GUARDS:
            try:
                self.boundary = find_boundary()
            except SandboxUnavailableError as exc:
                if isolation is Isolation.OS:
                    raise
                logger.warning("sandboxed code runs behind the in-process guards only: %s", exc.missing)

    def __repr__(self) -> str:
        isolation = "os" if self.boundary is not None else "guards"
        return f"Sandbox({self.limits!r}, isolation={isolation!r})"

    def run(self, code: str, variables: Mapping[str, Any] | None = None) -> SandboxResult:
        """Run ``code`` with ``variables`` (JSON values; others become strings) as globals.

        The code also gets ``FINAL(value)``, which ends it and returns ``value``
        (a JSON value) as :attr:`SandboxResult.final_value`.
        """
        root = tempfile.mkdtemp(prefix="ace-rr-")
        try:
            return self._run_in(root, code, dict(variables or {}))
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _run_in(self, root: str, code: str, variables: dict[str, Any]) -> SandboxResult:
        workdir = os.path.join(root, "work")
        os.mkdir(workdir)
        request: dict[str, Any] = {"code": code, "variables": variables, "limits": self.limits.for_child()}
        argv = [self.python, "-I", "-S", "-B", CHILD_SCRIPT, root]
        if self.boundary is not None:
            request["boundary"] = {"uid": SANDBOX_UID, "seccomp": self.boundary.seccomp.hex()}
            argv = self.boundary.command(self.python, CHILD_SCRIPT, root)
            if os.getuid() == 0:
                # The code runs as SANDBOX_UID: its own directory is the one it may write; the
                # run's directory stays root's, searchable only (input and result are root's).
                os.chown(workdir, SANDBOX_UID, SANDBOX_UID)
                os.chmod(root, 0o711)
        with open(os.path.join(root, "input.json"), "w", encoding="utf-8") as handle:
            json.dump(request, handle, default=str)
        out_path, err_path = os.path.join(root, "stdout"), os.path.join(root, "stderr")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            started = time.monotonic()
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=workdir,
                env=CHILD_ENV,
                start_new_session=True,
                close_fds=True,
            )
            timed_out = _wait(process, self.limits.timeout_s)
            duration = time.monotonic() - started
        outcome = _read_outcome(os.path.join(root, "result.json"))
        stdout = _read_capped(out_path, self.limits.max_output_chars, outcome.get("stdout_chars"))
        stderr = _read_capped(err_path, self.limits.max_output_chars, outcome.get("stderr_chars"))
        returncode = process.returncode
        if self.boundary is not None and not outcome and returncode > _BWRAP_SIGNAL_BASE:
            returncode = _BWRAP_SIGNAL_BASE - returncode  # as Popen reports a signal: negative
        killed, error = self._diagnose(returncode, timed_out, outcome, stderr)
        if killed is not None:
            logger.info("sandboxed code stopped: %s after %.2fs", killed, duration)
        return SandboxResult(
            stdout=stdout,
            stderr=stderr,
            final_called=bool(outcome.get("final_called")) and killed is None,
            final_value=outcome.get("final") if killed is None else None,
            error=error,
            killed=killed,
            duration_s=duration,
            exit_code=returncode,
        )

    def _diagnose(
        self, returncode: int | None, timed_out: bool, outcome: dict[str, Any], stderr: str
    ) -> tuple[str | None, str | None]:
        """Why the run stopped, as (killed, error)."""
        if timed_out:
            return KILLED_TIMEOUT, (
                f"TimeoutError: the code ran longer than {self.limits.timeout_s:g}s and was killed"
            )
        if returncode is not None and returncode < 0:
            return _diagnose_signal(-returncode, stderr, self.limits)
        if not outcome:
            tail = stderr.strip().splitlines()[-1:] or ["no output on stderr"]
            if any(marker in stderr for marker in _MEMORY_MARKERS):
                return KILLED_MEMORY, f"MemoryError: the code ran out of its {self.limits.memory_mb} MB"
            return None, f"SandboxError: the process exited with code {returncode} and no result ({tail[0]})"
        killed = outcome.get("killed")
        error = outcome.get("error")
        return (str(killed) if killed else None), (str(error) if error else None)


def _wait(process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait for ``process``; on timeout (or if interrupted) kill its process group. True if timed out."""
    try:
        if _exits_within(process, timeout_s):
            process.wait()  # it has exited: this only reaps it
            return False
        _kill_group(process)
        return True
    except BaseException:
        _kill_group(process)
        raise


def _exits_within(process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether ``process`` exits within ``timeout_s``, woken by its pidfd where Linux gives one.

    ``Popen.wait(timeout=...)`` polls, sleeping up to 50 ms between looks: a run of 70 ms was
    seen to end about 120 ms after it started. A pidfd becomes readable the moment the process
    exits. The process is not reaped yet, so its pid cannot have been reused.
    """
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later: Popen's own wait
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(timeout_s * 1000))
    finally:
        os.close(pidfd)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # Not yet reaped, so the group id cannot belong to anyone else.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _diagnose_signal(number: int, stderr: str, limits: SandboxLimits) -> tuple[str | None, str]:
    name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
    if number == signal.SIGXCPU:
        return (
            KILLED_CPU,
            f"TimeoutError: the code used more than {counted(limits.effective_cpu_s, 'CPU second')}",
        )
    # SIGKILL we did not send: the kernel's OOM killer (the CPU limit sends SIGXCPU first).
    if number == signal.SIGKILL or any(marker in stderr for marker in _MEMORY_MARKERS):
        return KILLED_MEMORY, f"MemoryError: the code ran out of its {limits.memory_mb} MB ({name})"
    return None, f"SandboxError: the process died from signal {name}"


def _read_outcome(path: str) -> dict[str, Any]:
    """The child's result file, or {} when it did not write one (killed, crashed)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_capped(path: str, limit: int, total_chars: object) -> str:
    """At most ``limit`` characters of a captured stream, with a note when more was written."""
    with open(path, "rb") as handle:
        data = handle.read(limit * _BYTES_PER_CHAR + 1)
        more_on_disk = bool(handle.read(1))
    text = data.decode("utf-8", errors="replace")
    total = total_chars if isinstance(total_chars, int) else len(text)
    if len(text) > limit or total > limit or more_on_disk:
        shown = text[:limit]
        return f"{shown}\n... (output cut at {limit} of {max(total, len(text))} characters)"
    return text
