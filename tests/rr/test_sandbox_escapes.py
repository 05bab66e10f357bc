"""Every escape of issue 23 against real sandbox processes: each must fail (run as root, as CI does)."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest

from ace_workers.rr import Sandbox
from ace_workers.rr.boundary import SANDBOX_UID
from tests.support.sandbox import RAW_SOCKET, REMOVE_IMPORT_GUARD, processes_running

pytestmark = pytest.mark.slow  # every test starts real interpreters

SECRET = "TOPSECRET-42"
HOST_FILES_MARKER = "root:"  # the first line of /etc/passwd and /etc/shadow


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    """A file of the test's, outside the sandbox's directory."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    return secret


def output_of(result: object) -> str:
    return f"{result.stdout}{result.stderr}{result.final_value!r}"  # type: ignore[attr-defined]


def test_the_code_runs_as_an_unprivileged_uid(sandbox: Sandbox) -> None:
    result = sandbox.run(REMOVE_IMPORT_GUARD + "FINAL(sys.modules['posix'].getuid())")
    assert result.final_value == SANDBOX_UID


@pytest.mark.parametrize(
    "code",
    [
        RAW_SOCKET + "(2,1).connect(('127.0.0.1',{port}))",
        REMOVE_IMPORT_GUARD + RAW_SOCKET + "(2, 1).connect(('127.0.0.1', {port}))",
    ],
    ids=["subclasses", "import-guard-removed"],
)
def test_no_socket_reaches_a_listener_on_the_host(
    sandbox: Sandbox, listener: socket.socket, code: str
) -> None:
    result = sandbox.run(code.format(port=listener.getsockname()[1]))
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing connected
    assert result.error is not None


@pytest.mark.parametrize(
    "code",
    [
        "import sys\nposix = sys.modules['posix']\nprint(posix.read(posix.open({path!r}, 0), 1000))",
        "import sys\nprint(sys.modules['_io'].FileIO({path!r}).read())",
    ],
    ids=["posix.open", "_io.FileIO"],
)
@pytest.mark.parametrize("target", ["test-file", "/etc/shadow", "/etc/passwd"])
def test_a_host_file_cannot_be_read(sandbox: Sandbox, secret_file: Path, code: str, target: str) -> None:
    path, marker = (str(secret_file), SECRET) if target == "test-file" else (target, HOST_FILES_MARKER)
    result = sandbox.run(code.format(path=path))
    assert marker not in output_of(result)
    assert result.error is not None


@pytest.mark.parametrize(
    "code",
    [
        "import sys\nposix = sys.modules['posix']\n"
        "posix.write(posix.open({path!r}, posix.O_CREAT | posix.O_WRONLY), b'planted')",
        "import sys\nsys.modules['_io'].FileIO({path!r}, 'w').write(b'planted')",
    ],
    ids=["posix.open", "_io.FileIO"],
)
def test_no_file_can_be_written_outside(sandbox: Sandbox, tmp_path: Path, code: str) -> None:
    planted = tmp_path / "planted.txt"
    result = sandbox.run(code.format(path=str(planted)))
    assert not planted.exists()
    assert result.error is not None


def test_removing_the_import_guard_runs_no_program(sandbox: Sandbox) -> None:
    code = (
        REMOVE_IMPORT_GUARD + "import subprocess\nprint(subprocess.run(['id'], capture_output=True).stdout)"
    )
    result = sandbox.run(code)
    assert "uid=" not in result.stdout
    assert result.error is not None
    assert result.error.startswith("PermissionError")


def test_ctypes_fork_is_refused(sandbox: Sandbox) -> None:
    result = sandbox.run(REMOVE_IMPORT_GUARD + "import ctypes\nFINAL(ctypes.CDLL(None).fork())")
    assert result.final_value == -1  # fork() failed: no second process


def test_ctypes_execv_is_refused(sandbox: Sandbox) -> None:
    code = REMOVE_IMPORT_GUARD + (
        "import ctypes\nargv = (ctypes.c_char_p * 2)(b'/usr/bin/id', None)\n"
        "ctypes.CDLL(None).execv(b'/usr/bin/id', argv)\nFINAL('still the interpreter')"
    )
    result = sandbox.run(code)
    assert result.final_value == "still the interpreter"


def test_no_child_outlives_the_timeout(sandbox: Sandbox) -> None:
    argv = ("sleep", "4747")
    code = REMOVE_IMPORT_GUARD + (
        f"import subprocess, time\nsubprocess.Popen({list(argv)!r}, start_new_session=True)\ntime.sleep(60)"
    )
    sandbox.run(code)
    survivors = processes_running(*argv)
    for pid in survivors:  # the old sandbox left them: do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert survivors == []
