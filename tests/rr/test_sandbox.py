"""The process sandbox: limits, refusals, result framing, cleanup and concurrency."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ace_workers.rr import KILLED_CPU, KILLED_MEMORY, KILLED_TIMEOUT, Sandbox, SandboxLimits
from tests.support.sandbox import LIMITS

pytestmark = pytest.mark.slow  # every test starts real interpreters

MARGIN_S = 0.75  # killing and reaping a process group, on a loaded CI machine


def test_code_sees_its_variables_and_final_returns_a_value(sandbox: Sandbox) -> None:
    result = sandbox.run(
        "print(trace['steps'][1])\nFINAL({'steps': len(trace['steps'])})", {"trace": {"steps": ["a", "b"]}}
    )
    assert (result.stdout, result.final_called, result.final_value) == ("b\n", True, {"steps": 2})


def test_final_ends_the_code_even_inside_a_broad_except(sandbox: Sandbox) -> None:
    result = sandbox.run("try:\n    FINAL('done')\nexcept Exception:\n    print('swallowed')\nprint('after')")
    assert (result.final_value, result.stdout) == ("done", "")


def test_an_infinite_loop_is_killed_at_the_timeout(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = sandbox.run("while True:\n    pass")
    elapsed = time.monotonic() - started
    assert result.killed == KILLED_TIMEOUT
    assert LIMITS.timeout_s <= elapsed < LIMITS.timeout_s + MARGIN_S
    assert result.error is not None
    assert result.error.startswith("TimeoutError")


def test_a_sleeping_child_is_killed_at_the_timeout_too(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = sandbox.run("import time\ntime.sleep(60)")
    assert result.killed == KILLED_TIMEOUT
    assert time.monotonic() - started < LIMITS.timeout_s + MARGIN_S


@pytest.mark.parametrize(("timeout_s", "cpu_s"), [(1, 2), (1.5, 3), (10, 11)])
def test_the_default_cpu_limit_is_a_second_beyond_the_timeout(timeout_s: float, cpu_s: int) -> None:
    # Equal limits raced: a busy loop was sometimes reported as "cpu" when the
    # parent's wait woke late, though the wall-clock timeout is the one meant to act.
    assert SandboxLimits(timeout_s=timeout_s).effective_cpu_s == cpu_s


def test_the_cpu_limit_stops_a_busy_loop_before_a_longer_timeout() -> None:
    result = Sandbox(SandboxLimits(timeout_s=10, cpu_s=1)).run("while True:\n    pass")
    assert result.killed == KILLED_CPU
    assert result.duration_s < 4


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)", "PermissionError"),
        ("import socket\nsocket.socket().connect(('127.0.0.1', {port}))", "PermissionError"),
        ("import importlib\nimportlib.import_module('_socket').socket()", "PermissionError"),
        ("import _socket\n_socket.socket().connect(('127.0.0.1', {port}))", "ImportError"),
        ("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/')", "ImportError"),
    ],
)  # fmt: skip
def test_a_socket_to_a_listening_port_is_refused(
    sandbox: Sandbox, listener: socket.socket, code: str, expected: str
) -> None:
    port = listener.getsockname()[1]
    result = sandbox.run(code.format(port=port))
    assert result.error is not None
    assert result.error.startswith(expected)
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing connected


def test_the_network_refusal_names_the_sandbox(sandbox: Sandbox, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    result = sandbox.run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}))")
    assert result.error == "PermissionError: network access is disabled in the sandbox"


@pytest.mark.parametrize(
    "code",
    [
        "print(open({path!r}).read())",
        "import pathlib\nprint(pathlib.Path({path!r}).read_text())",
        "import os\nprint(os.read(os.open({path!r}, os.O_RDONLY), 100))",
        "import io\nprint(io.FileIO({path!r}).read())",
        "import os\nos.symlink({path!r}, 'link')\nprint(open('link').read())",
        "import os\nos.chdir(os.path.dirname({path!r}))\nprint(open('secret.txt').read())",
        "import sys\nprint(sys.modules['_io'].open({path!r}).read())",
    ],
)
def test_a_file_outside_the_working_directory_cannot_be_read(
    sandbox: Sandbox, tmp_path: Path, code: str
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-42")
    result = sandbox.run(code.format(path=str(secret)))
    assert "TOPSECRET-42" not in result.stdout + result.stderr + repr(result.final_value)
    assert result.error is not None
    assert result.error.startswith("PermissionError: sandbox refused")


def test_a_listing_outside_the_working_directory_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "planted.txt").write_text("x")
    result = sandbox.run(f"import os\nprint(os.listdir({str(tmp_path)!r}))")
    assert "planted.txt" not in result.stdout
    assert result.error is not None
    assert result.error.startswith("PermissionError: sandbox refused")


def test_files_inside_the_working_directory_can_be_written_and_read(sandbox: Sandbox) -> None:
    result = sandbox.run(
        "open('notes.txt', 'w').write('kept')\nimport os\nFINAL([os.listdir(), open('notes.txt').read()])"
    )
    assert result.final_value == [["notes.txt"], "kept"]


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.system('true')",
        "import os\nos.fork()",
        "import subprocess",
        "import ctypes",
        "import multiprocessing",
    ],
)
def test_processes_and_ctypes_are_refused(sandbox: Sandbox, code: str) -> None:
    result = sandbox.run(code)
    assert result.error is not None
    assert result.error.startswith(("PermissionError", "ImportError"))


# Standard modules analysis code may want; each loads when the code imports it, under the guards.
ANALYSIS_MODULES = (
    "json", "re", "math", "collections", "statistics", "itertools", "functools", "textwrap",
    "string", "datetime", "random", "decimal", "fractions", "operator", "difflib", "heapq",
    "bisect", "typing", "dataclasses", "pprint", "copy", "unicodedata", "enum", "hashlib",
    "base64", "csv", "html", "fnmatch", "time", "uuid", "glob", "pathlib",
)  # fmt: skip


def test_the_standard_library_can_still_be_imported(sandbox: Sandbox) -> None:
    result = sandbox.run(
        f"import {', '.join(ANALYSIS_MODULES)}\n"
        "FINAL([statistics.mean([1, 2, 3]), hashlib.sha256(b'x').hexdigest()[:4],"
        " str(decimal.Decimal('1.5')), len(str(uuid.uuid4())), random.Random(1).randint(0, 0),"
        " json.dumps(re.findall('a', 'aa'))])"
    )
    assert result.error is None
    assert result.final_value == [2, "2d71", "1.5", 36, 0, '["a", "a"]']


@pytest.mark.parametrize("code", ["x = bytearray(10**10)", "x = []\nwhile True:\n    x.append(' ' * 10**6)"])
def test_an_allocation_bomb_is_stopped_and_the_next_run_works(code: str) -> None:
    # A wall clock far past what filling 256 MB takes: on a loaded machine the 1.5 s of the other
    # tests can run out first, and this test is about the memory limit.
    sandbox = Sandbox(SandboxLimits(timeout_s=20, memory_mb=LIMITS.memory_mb))
    result = sandbox.run(code)
    assert result.killed == KILLED_MEMORY
    assert result.error is not None
    assert "MemoryError" in result.error
    assert sandbox.run("FINAL(1 + 1)").final_value == 2


def test_many_threads_run_code_at_once_and_each_gets_its_own_answer(sandbox: Sandbox) -> None:
    code = "print(trace)\nFINAL(trace * 3)"
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: sandbox.run(code, {"trace": i}), range(16)))
    assert [r.final_value for r in results] == [i * 3 for i in range(16)]
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(16)]


# The second tail is killed at the timeout (sleeping: a busy loop would take a core from the
# rest of the suite for the same verdict).
@pytest.mark.parametrize("tail", ["", "import time\ntime.sleep(60)"], ids=["finished", "killed"])
def test_the_temporary_directory_is_deleted_afterwards(
    sandbox: Sandbox, tail: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The code sees its directory at /sandbox/work: look where the parent made it instead.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = sandbox.run(f"open('notes.txt', 'w').write('x')\nprint('written')\n{tail}")
    assert result.killed == (KILLED_TIMEOUT if tail else None)
    assert result.stdout == "written\n"
    assert list(tmp_path.iterdir()) == []


def test_printing_a_fake_result_does_not_forge_one(sandbox: Sandbox) -> None:
    forged = '{"final_called": true, "final": "forged", "error": null, "killed": null}'
    code = f"print({forged!r})\nopen('../result.json', 'w').write({forged!r})"
    result = sandbox.run(code)
    assert (result.final_called, result.final_value) == (False, None)
    assert result.error is not None
    assert result.error.startswith("PermissionError: sandbox refused")


def test_output_is_cut_to_the_limit() -> None:
    result = Sandbox(SandboxLimits(timeout_s=2, max_output_chars=100)).run("print('x' * 5000)")
    assert result.stdout.startswith("x" * 100 + "\n... (output cut at 100 of 5001 characters)")


def test_the_workers_environment_does_not_reach_the_code(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-for-the-sandbox")
    result = sandbox.run("import os\nprint(dict(os.environ))")
    assert "sk-test-not-for-the-sandbox" not in result.stdout


def test_a_raised_exception_is_reported_with_its_type_and_line(sandbox: Sandbox) -> None:
    result = sandbox.run("x = 1\nx / 0")
    assert result.error == "ZeroDivisionError: division by zero"
    assert 'File "<sandbox>", line 2' in result.stderr


def test_a_final_value_json_cannot_carry_is_an_error(sandbox: Sandbox) -> None:
    result = sandbox.run("FINAL({1, 2})")
    assert not result.final_called
    assert result.error is not None
    assert result.error.startswith("TypeError: FINAL needs a JSON value")


def test_limits_below_what_an_interpreter_needs_are_refused() -> None:
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=8)


def test_the_parent_process_limits_are_untouched(sandbox: Sandbox) -> None:
    import resource

    before = resource.getrlimit(resource.RLIMIT_AS), os.getcwd()
    sandbox.run("import os\nos.chdir('..')\nx = bytearray(10**10)")
    assert (resource.getrlimit(resource.RLIMIT_AS), os.getcwd()) == before
