"""The child side of the sandbox: run as ``python -I -S sandbox_child.py ROOT`` in a fresh process.

Never imported by the parent. The script, standard library only:

1. reads ``ROOT/input.json`` (the code, its variables and the limits);
2. behind the OS boundary, drops to the sandbox uid when it starts as root
   (and refuses to go on as root);
3. lowers its own resource limits with ``resource.setrlimit`` (address space,
   CPU seconds, file size, open files, processes, no core dumps) -- done here
   rather than in a ``preexec_fn``, which is unsafe in a multi-threaded
   parent, and after the uid drop, so ``RLIMIT_NPROC`` holds;
4. behind the OS boundary, loads the parent's seccomp program (``prctl``),
   after its own start-up, which needed ``execve``;
5. installs the guards: no sockets, no processes, no ``ctypes``, no file
   path outside ``ROOT/work`` (its working directory). The standard library
   stays importable, and a module loads when the code imports it, under the
   guards: a run pays only for the imports its code makes (pre-importing
   thirty modules "analysis code may want" took a third of every run);
6. runs the code with the variables, ``FINAL`` and a capped ``print``;
7. writes ``ROOT/result.json`` with a file object opened *before* the guards
   went up, so printing cannot forge the result: the parent reads stdout and
   stderr from their own files, and the result only from this one.

The guards are defence in depth inside one interpreter, not a security
boundary: code that digs through ``object.__subclasses__()`` or the garbage
collector can reach the unguarded originals. The boundary is the OS: see
:mod:`ace_workers.rr.boundary`.
"""

from __future__ import annotations

import builtins
import io
import json
import linecache
import os
import resource
import sys
import threading
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

__all__: list[str] = []

# Modules nothing may import once the guards are up (the finder also stops importlib).
BLOCKED_MODULES = frozenset(
    {
        "_socket", "_ssl", "ssl", "ctypes", "_ctypes", "subprocess", "_posixsubprocess",
        "multiprocessing", "_multiprocessing", "pty", "mmap", "urllib.request", "http.client",
        "ftplib", "smtplib", "socketserver", "asyncio",
    }
)  # fmt: skip
# Low-level modules the standard library itself uses, refused only to the code's own imports.
USER_BLOCKED_MODULES = BLOCKED_MODULES | {
    "posix", "nt", "_io", "gc", "signal", "_signal", "_thread", "resource", "fcntl", "select",
    "selectors",
}  # fmt: skip
USER_MODULE = "__sandbox__"  # the __name__ the code runs under
NETWORK_MESSAGE = "network access is disabled in the sandbox"
PROCESS_MESSAGE = "starting processes is disabled in the sandbox"
SOURCE_NAME = "<sandbox>"
# os functions that take paths as their leading positional arguments, with how many.
PATH_FUNCTIONS = {
    "open": 1, "listdir": 1, "scandir": 1, "stat": 1, "lstat": 1, "access": 1, "chdir": 1,
    "chmod": 1, "chown": 1, "lchown": 1, "mkdir": 1, "remove": 1, "unlink": 1, "rmdir": 1,
    "rename": 2, "replace": 2, "link": 2, "symlink": 2, "readlink": 1, "truncate": 1,
    "utime": 1, "mkfifo": 1, "mknod": 1, "statvfs": 1, "chroot": 1, "pathconf": 1,
    "listxattr": 1, "getxattr": 1, "setxattr": 1, "removexattr": 1, "walk": 1,
}  # fmt: skip
# The ones of PATH_FUNCTIONS that only read (os.open decides by its flags).
READ_FUNCTIONS = frozenset(
    {"listdir", "scandir", "stat", "lstat", "access", "chdir", "readlink", "statvfs", "pathconf",
     "listxattr", "getxattr", "walk"}
)  # fmt: skip
PROCESS_FUNCTIONS = (
    "system", "popen", "fork", "forkpty", "vfork", "kill", "killpg", "posix_spawn", "posix_spawnp",
    "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe",
    "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnvp", "spawnvpe",
    "startfile", "plock", "setuid", "setgid", "putenv", "unsetenv",
)  # fmt: skip
NETWORK_NAMES = (
    "socket", "SocketType", "create_connection", "create_server", "socketpair", "fromfd",
    "fromshare", "getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr",
    "getnameinfo", "sethostname", "if_nameindex",
)  # fmt: skip


class FinalCalled(BaseException):
    """Raised by FINAL to end the user code; a BaseException so ``except Exception`` keeps out."""


class CappedWriter(io.TextIOBase):
    """A text stream that passes the first ``limit`` characters to ``target`` and counts the rest."""

    def __init__(self, target: io.TextIOBase, limit: int) -> None:
        self._target = target
        self._limit = limit
        self.chars = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self._limit - self.chars
        if room > 0:
            self._target.write(text[:room])
            self._target.flush()
        self.chars += len(text)
        return len(text)

    def flush(self) -> None:
        self._target.flush()


def set_limits(limits: dict[str, int]) -> None:
    """Lower this process's resource limits (soft and hard: the code cannot raise them back)."""
    memory = limits["memory_mb"] * 1024 * 1024
    wanted = {
        resource.RLIMIT_AS: (memory, memory),
        # At the soft limit the kernel sends SIGXCPU (the parent reports "cpu"); SIGKILL a second later.
        resource.RLIMIT_CPU: (limits["cpu_s"], limits["cpu_s"] + 1),
        resource.RLIMIT_FSIZE: (limits["file_size_bytes"], limits["file_size_bytes"]),
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_NOFILE: (limits["open_files"], limits["open_files"]),
        # Not enforced for root; for any other user the kernel refuses fork() and new threads.
        resource.RLIMIT_NPROC: (0, 0),
    }
    for which, (soft, hard) in wanted.items():
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(which, (soft, hard))


def drop_privileges(uid: int) -> None:
    """Become ``uid`` (and its gid, no supplementary groups) for good; refuse to go on as root."""
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)  # from root to another uid for real, saved uid too: no way back
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("sandbox: refusing to run code as root")


# prctl options and the seccomp mode, from <linux/prctl.h> and <linux/seccomp.h>.
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
BPF_INSTRUCTION_BYTES = 8  # struct sock_filter


def load_seccomp(program: bytes) -> None:
    """Load the BPF seccomp ``program`` into this process for good (no new privileges either)."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // BPF_INSTRUCTION_BYTES, ctypes.cast(buffer, ctypes.c_char_p))
    for option, argument in (
        (PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1)),
        (PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER)),
    ):
        extra = ctypes.byref(fprog) if option == PR_SET_SECCOMP else ctypes.c_ulong(0)
        if libc.prctl(option, argument, extra, ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            raise SystemExit(f"sandbox: prctl({option}) failed: {os.strerror(ctypes.get_errno())}")


class PathGuard:
    """Decides whether a path may be used: inside the working directory, or read-only in the library.

    Paths are resolved with ``realpath``, so a symlink pointing out is judged
    by its target. The library roots (the interpreter's own ``sys.path``:
    the standard library, public code) may be read, so ``import`` and
    ``linecache`` keep working; nothing else outside the working directory
    may be read or written.
    """

    def __init__(self, root: str, read_roots: list[str]) -> None:
        self.root = os.path.realpath(root)
        self.read_roots = [os.path.realpath(r) for r in read_roots if r and os.path.isdir(r)]
        self._resolving = threading.local()

    @property
    def resolving(self) -> bool:
        """True while this thread resolves a path (realpath calls the guarded os functions)."""
        return bool(getattr(self._resolving, "on", False))

    def check(self, path: object, action: str, *, write: bool) -> None:
        """Raise PermissionError unless ``path`` may be used so; file descriptors pass."""
        if isinstance(path, int) or self.resolving:
            return
        if not isinstance(path, (str, bytes, os.PathLike)):
            return  # not a path: the wrapped function raises its own error
        name = os.fsdecode(os.fspath(path))
        self._resolving.on = True
        try:
            resolved = os.path.realpath(os.path.join(os.getcwd(), name))
        finally:
            self._resolving.on = False
        roots = [self.root] if write else [self.root, *self.read_roots]
        if not any(resolved == r or resolved.startswith(r + os.sep) for r in roots):
            raise PermissionError(
                f"sandbox refused to {action} {name!r}: only paths inside the working directory are allowed"
            )

    def wrap(self, function: Callable[..., Any], name: str, count: int) -> Callable[..., Any]:
        """``function`` with its first ``count`` path arguments checked."""
        writes = name not in READ_FUNCTIONS

        def guarded(*args: Any, **kwargs: Any) -> Any:
            if not self.resolving:
                if any(kwargs.get(key) is not None for key in ("dir_fd", "src_dir_fd", "dst_dir_fd")):
                    raise PermissionError(f"sandbox refused {name}() with a directory descriptor")
                paths = list(args[:count]) or [kwargs.get(k) for k in ("path", "src", "dst", "top", "file")]
                if not args and name in ("listdir", "scandir", "walk"):
                    paths = ["."]
                write = writes or (name == "open" and _opens_for_writing(args, kwargs))
                for path in paths:
                    if path is not None:
                        self.check(path, name, write=write)
            return function(*args, **kwargs)

        guarded.__name__ = getattr(function, "__name__", name)
        guarded.__doc__ = getattr(function, "__doc__", None)
        return guarded


def _opens_for_writing(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """True if an ``os.open`` call's flags can write."""
    flags = args[1] if len(args) > 1 else kwargs.get("flags", 0)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    return isinstance(flags, int) and bool(flags & write_flags)


def _mode_writes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """True if an ``open()`` call's mode can write."""
    mode = args[0] if args else kwargs.get("mode", "r")
    return not isinstance(mode, str) or any(flag in mode for flag in "wax+")


def refuse(message: str) -> Callable[..., NoReturn]:
    """A function that raises PermissionError(``message``) whatever it is called with."""

    def refused(*args: object, **kwargs: object) -> NoReturn:
        raise PermissionError(message)

    return refused


def block_network() -> None:
    """Make every way to a socket raise PermissionError."""
    import _socket
    import socket

    for module in (socket, _socket):
        for name in NETWORK_NAMES:
            if hasattr(module, name):
                setattr(module, name, refuse(NETWORK_MESSAGE))


def block_processes() -> None:
    """Make every way to start or signal a process raise PermissionError."""
    import posix

    for module in (os, posix):
        for name in PROCESS_FUNCTIONS:
            if hasattr(module, name):
                setattr(module, name, refuse(PROCESS_MESSAGE))


def guard_files(guard: PathGuard) -> None:
    """Refuse every file path outside the working directory, for open() and the os functions."""
    import _io

    real_open = io.open

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        guard.check(file, "open", write=_mode_writes(args, kwargs))
        return real_open(file, *args, **kwargs)

    class GuardedFileIO(io.FileIO):
        """io.FileIO that checks its path first."""

        def __init__(self, file: Any, *args: Any, **kwargs: Any) -> None:
            guard.check(file, "open", write=_mode_writes(args, kwargs))
            super().__init__(file, *args, **kwargs)

    # _io.open too: the import system reads source through it (open_code), hence the read roots.
    builtins.open = io.open = _io.open = guarded_open
    io.FileIO = GuardedFileIO  # type: ignore[misc]
    io.open_code = lambda path: guarded_open(path, "rb")
    # posix keeps its functions: the import system calls them (and the path check itself does).
    for name, count in PATH_FUNCTIONS.items():
        if hasattr(os, name):
            setattr(os, name, guard.wrap(getattr(os, name), name, count))


class ImportGuard:
    """Refuses the blocked modules by name, cached in sys.modules or not."""

    def __init__(self, real_import: Callable[..., ModuleType]) -> None:
        self._real_import = real_import

    @staticmethod
    def blocked(name: str, blocked: frozenset[str] = BLOCKED_MODULES) -> bool:
        """True if ``name`` or a package it belongs to is in ``blocked``."""
        parts = name.split(".")
        return any(".".join(parts[: i + 1]) in blocked for i in range(len(parts)))

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> ModuleType:
        importer = args[0] if args else kwargs.get("globals")
        from_code = not isinstance(importer, dict) or importer.get("__name__") == USER_MODULE
        blocked = USER_BLOCKED_MODULES if from_code else BLOCKED_MODULES
        fromlist = (args[2] if len(args) > 2 else kwargs.get("fromlist")) or ()
        if self.blocked(name, blocked) or any(self.blocked(f"{name}.{i}", blocked) for i in fromlist):
            raise ImportError(f"import of {name!r} is disabled in the sandbox")
        return self._real_import(name, *args, **kwargs)

    # A meta path finder too: importlib.import_module does not go through builtins.__import__.
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        """Refuse a blocked module before any real finder looks for it."""
        if self.blocked(name):
            raise ImportError(f"import of {name!r} is disabled in the sandbox")
        return None


def install_guards(workdir: str) -> None:
    """Block network, processes, foreign paths and imports."""
    os.environ.clear()  # before putenv/unsetenv are refused
    block_network()
    block_processes()
    guard_files(PathGuard(workdir, read_roots=list(sys.path)))
    # Patched modules stay in sys.modules on purpose: any import of them returns the patched
    # module; a fresh import (e.g. of _socket) would bring the original functions back.
    guard = ImportGuard(builtins.__import__)
    builtins.__import__ = guard
    sys.meta_path.insert(0, guard)


def run_code(code: str, variables: dict[str, Any]) -> dict[str, Any]:
    """Run ``code`` with ``variables`` and FINAL; what happened, as the result's fields."""
    outcome: dict[str, Any] = {"final_called": False, "final": None, "error": None, "killed": None}

    def final(value: Any) -> NoReturn:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"FINAL needs a JSON value (dict, list, str, number): {exc}") from None
        outcome["final_called"] = True
        outcome["final"] = value
        raise FinalCalled

    namespace: dict[str, Any] = {"__name__": USER_MODULE, "__builtins__": builtins, **variables}
    namespace["FINAL"] = final
    linecache.cache[SOURCE_NAME] = (len(code), None, code.splitlines(True), SOURCE_NAME)
    try:
        exec(compile(code, SOURCE_NAME, "exec"), namespace)
    except FinalCalled:
        pass
    except MemoryError:
        # The namespace may hold what filled the memory: drop it so the result can be written.
        namespace.clear()
        outcome["error"] = "MemoryError: the code ran out of its memory limit"
        outcome["killed"] = "memory"
    except BaseException as exc:  # whatever the code raised (SystemExit too) is reported
        outcome["error"] = f"{type(exc).__name__}: {exc}"
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SOURCE_NAME]
        sys.stderr.write("Traceback (sandboxed code):\n")
        sys.stderr.write("".join(traceback.format_list(frames)))
        sys.stderr.write(f"{outcome['error']}\n")
    return outcome


def main(root: str) -> None:
    """Set up, run the code of ``root/input.json``, write ``root/result.json``."""
    with open(os.path.join(root, "input.json"), encoding="utf-8") as handle:
        request = json.load(handle)
    workdir = os.path.join(root, "work")
    os.chdir(workdir)
    # Opened before the guards: the only handle on the result, the code never gets one.
    result_file = open(os.path.join(root, "result.json"), "w", encoding="utf-8")  # noqa: SIM115
    limit = int(request["limits"]["max_output_chars"])
    stdout = CappedWriter(sys.stdout, limit)  # type: ignore[arg-type]
    stderr = CappedWriter(sys.stderr, limit)  # type: ignore[arg-type]
    sys.stdout, sys.stderr = stdout, stderr
    boundary = request.get("boundary")
    if boundary is not None:
        drop_privileges(int(boundary["uid"]))
    set_limits(request["limits"])
    if boundary is not None:
        load_seccomp(bytes.fromhex(boundary["seccomp"]))
    install_guards(workdir)
    outcome = run_code(request["code"], request["variables"])
    outcome.update(stdout_chars=stdout.chars, stderr_chars=stderr.chars)
    try:
        text = json.dumps(outcome)
    except MemoryError:
        text = json.dumps({**outcome, "final": None, "final_called": False, "killed": "memory"})
    result_file.write(text)
    result_file.close()
    stdout.flush()
    stderr.flush()


if __name__ == "__main__":
    main(sys.argv[1])
