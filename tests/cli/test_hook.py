"""``ace-workers hook claude-code``: a finished Claude Code session goes to the inbox, or to the workers."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.cli.hook import MAX_HOOK_INPUT_BYTES
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.keys import SkillbookKeys
from tests.support.claude_code import claude_session
from tests.support.cli import keys_of, said

ZORB_TASK = "Solve the zorb puzzle. Input: 1234"
REPO = Path(__file__).resolve().parents[2]


def hook_input(transcript: Path, session_id: str = "5f0c-session") -> str:
    """What Claude Code writes to a SessionEnd hook's stdin."""
    return json.dumps(
        {
            "session_id": session_id,
            "transcript_path": str(transcript.resolve()),
            "cwd": str(transcript.resolve().parent),
            "hook_event_name": "SessionEnd",
            "reason": "prompt_input_exit",
        }
    )


def inbox(client: redis.Redis, skillbook: str, prefix: str) -> list[dict[str, Any]]:
    """The traces waiting in a skillbook's inbox, oldest first."""
    entries = client.xrange(SkillbookKeys(skillbook, prefix).inbox)
    return [json.loads(fields[b"trace"]) for _, fields in entries]


@pytest.fixture
def hook_env(clean_env: pytest.MonkeyPatch, redis_url: str, redis_client: redis.Redis) -> str:
    """The environment of a hook pointed at the test Redis; the queue prefix it uses."""
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "clihook")
    return "clihook"


def run_hook(stdin: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["hook", "claude-code", *args], input=stdin)


def test_a_finished_session_is_kept_in_the_skillbooks_inbox_under_its_session_id(
    hook_env: str, redis_client: redis.Redis
) -> None:
    transcript = claude_session(Path("projects") / "a1.jsonl", ZORB_TASK)

    result = run_hook(hook_input(transcript), "--skillbook", "cc")

    assert result.exit_code == 0, result.output
    assert "session 5f0c-session: kept in the inbox of 'cc' for its nightly run" in said(result.output)
    [trace] = inbox(redis_client, "cc", hook_env)
    assert trace["session_id"] == "5f0c-session"
    assert ZORB_TASK in trace["question"]
    assert "no idea" in trace["answer"]


def test_now_sends_the_session_to_the_running_workers_and_they_learn_from_it(
    hook_env: str, redis_client: redis.Redis, redis_url: str
) -> None:
    transcript = claude_session(Path("a1.jsonl"), ZORB_TASK)
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, learn_threads=2):
            result = run_hook(hook_input(transcript), "--skillbook", "cc", "--now")
            assert result.exit_code == 0, result.output
            batch_id = said(result.output).split("as batch ")[1].split()[0]
            status = BatchHandle(batch_id, service.runtime).wait(timeout=60)
        sections = [skill.section for skill in service.runtime.store("cc").export().skills()]
    finally:
        service.close()
    assert (status.total, status.done, status.failed) == (1, 1, 0)
    assert sections == ["zorb"]
    assert inbox(redis_client, "cc", hook_env) == []


def test_now_without_running_workers_keeps_the_session_in_the_inbox(
    hook_env: str, redis_client: redis.Redis, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("ACE_WORKER_REPLY_SECONDS", "0.5")  # nobody will answer: a short wait
    transcript = claude_session(Path("a1.jsonl"), ZORB_TASK)

    result = run_hook(hook_input(transcript), "--skillbook", "cc", "--now")

    assert result.exit_code == 0, result.output
    assert "no worker serves" in said(result.output)
    assert "kept in the inbox instead" in said(result.output)
    assert [trace["session_id"] for trace in inbox(redis_client, "cc", hook_env)] == ["5f0c-session"]


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "no hook input on stdin within 5 s"),
        ("[1, 2]", "the hook input is a JSON list, not an object"),
        ("{not json", "the hook input is not JSON: '{not json'"),
        (
            '{"session_id": "x", "cwd": "/"}',
            "the hook input has no transcript_path (its keys: cwd, session_id)",
        ),
        ('{"transcript_path": "/no/such.jsonl"}', "transcript_path /no/such.jsonl: no such file"),
    ],
)
def test_bad_hook_input_exits_1_naming_the_problem_and_sends_nothing(
    hook_env: str, redis_client: redis.Redis, stdin: str, message: str
) -> None:
    result = run_hook(stdin, "--skillbook", "cc")

    # Exit 2 would block the event in Claude Code: a hook that fails only reports.
    assert result.exit_code == 1
    assert f"ace-workers hook claude-code: {message}" in said(result.stderr)
    assert keys_of(redis_client, hook_env) == []


def test_without_a_redis_url_the_hook_says_which_setting_is_missing(clean_env: pytest.MonkeyPatch) -> None:
    transcript = claude_session(Path("a1.jsonl"), ZORB_TASK)

    result = run_hook(hook_input(transcript))

    assert result.exit_code == 1
    assert "hook claude-code needs ACE_REDIS_URL" in said(result.stderr)


def test_an_unreachable_redis_exits_1_naming_it(clean_env: pytest.MonkeyPatch) -> None:
    transcript = claude_session(Path("a1.jsonl"), ZORB_TASK)
    clean_env.setenv("ACE_REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens on port 1

    result = run_hook(hook_input(transcript), "--now")

    assert result.exit_code == 1
    assert "Redis at redis://127.0.0.1:1/0 did not answer" in said(result.stderr)


def test_an_empty_session_is_skipped_without_failing(hook_env: str, redis_client: redis.Redis) -> None:
    transcript = Path("empty.jsonl")
    transcript.write_text(json.dumps({"type": "summary", "summary": "nothing happened"}) + "\n")

    result = run_hook(hook_input(transcript), "--skillbook", "cc")

    assert result.exit_code == 0, result.output
    assert "skipped:" in said(result.output)
    assert inbox(redis_client, "cc", hook_env) == []


def test_print_config_gives_the_session_end_entry_of_claude_codes_settings(
    clean_env: pytest.MonkeyPatch,
) -> None:
    result = CliRunner().invoke(
        app, ["hook", "claude-code", "--skillbook", "team-cc", "--now", "--print-config"]
    )

    assert result.exit_code == 0, result.output
    config = json.loads(result.output)
    assert config == {
        "hooks": {
            "SessionEnd": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "ace-workers hook claude-code --skillbook team-cc --now",
                        }
                    ]
                }
            ]
        }
    }


def hook_process(command: str, home: Path) -> subprocess.Popen[bytes]:
    """The hook as Claude Code runs it: ``command`` (an ``ace-workers`` command line) with a pipe on stdin."""
    argv = shlex.split(command)
    assert argv[0] == "ace-workers"
    launcher = [sys.executable, "-c", "from ace_workers.cli import main; main()"]
    return subprocess.Popen(
        launcher + argv[1:],
        env={**os.environ, "HOME": str(home)},
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(hook: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, str]:
    """Wait for the hook, its stdin still open; its exit code and stderr. (It is killed if it hangs.)"""
    try:
        returncode = hook.wait(timeout=timeout)
        assert hook.stderr is not None
        return returncode, hook.stderr.read().decode()
    finally:
        hook.kill()
        hook.wait()
        for pipe in (hook.stdin, hook.stdout, hook.stderr):
            if pipe is not None:
                pipe.close()


def test_the_configured_command_finishes_although_claude_code_leaves_stdin_open(
    hook_env: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    transcript = claude_session(tmp_path / "a1.jsonl", ZORB_TASK)
    printed = CliRunner().invoke(app, ["hook", "claude-code", "--skillbook", "cc", "--print-config"]).output
    command = json.loads(printed)["hooks"]["SessionEnd"][0]["hooks"][0]["command"]

    hook = hook_process(command, tmp_path)
    assert hook.stdin is not None
    hook.stdin.write(hook_input(transcript, session_id="open-stdin").encode())
    hook.stdin.flush()  # and left open, as Claude Code may leave it
    returncode, err = finish(hook)

    assert returncode == 0, err
    assert [trace["session_id"] for trace in inbox(redis_client, "cc", hook_env)] == ["open-stdin"]


def test_a_hook_given_nothing_on_an_open_stdin_gives_up_after_the_input_timeout(
    hook_env: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    returncode, err = finish(hook_process("ace-workers hook claude-code --input-timeout 0.5", tmp_path))

    assert returncode == 1
    assert "no hook input on stdin within 0.5 s" in err
    assert keys_of(redis_client, hook_env) == []


# -- what the hook reads is bounded ------------------------------------------------------------


@pytest.fixture
def home(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A home of its own, beside the project directory (the working directory, tmp_path)."""
    folder = tmp_path.parent / f"{tmp_path.name}-home"
    folder.mkdir()
    clean_env.setenv("HOME", str(folder))
    return folder


def test_a_transcript_linked_to_etc_shadow_is_refused_unread(
    hook_env: str, home: Path, redis_client: redis.Redis
) -> None:
    Path("session.jsonl").symlink_to("/etc/shadow")

    result = run_hook(json.dumps({"transcript_path": str(Path("session.jsonl").absolute())}))

    assert result.exit_code == 1
    assert "is /etc/shadow, outside your home and the project directory" in said(result.stderr)
    assert keys_of(redis_client, hook_env) == []


def test_a_transcript_outside_home_and_project_is_refused(
    hook_env: str, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    transcript = claude_session(elsewhere / "a1.jsonl", ZORB_TASK)
    (tmp_path / "project-home").mkdir()
    clean_env.setenv("HOME", str(tmp_path / "project-home"))

    result = run_hook(hook_input(transcript))

    assert result.exit_code == 1
    assert "outside your home and the project directory" in said(result.stderr)


def test_a_transcript_in_the_home_is_read_from_any_working_directory(
    hook_env: str, home: Path, clean_env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    transcript = claude_session(home / "a1.jsonl", ZORB_TASK)
    clean_env.chdir(home.parent)  # neither home nor project: the home alone admits it

    result = run_hook(hook_input(transcript, session_id="from-home"), "--skillbook", "cc")

    assert result.exit_code == 0, result.output
    assert [trace["session_id"] for trace in inbox(redis_client, "cc", hook_env)] == ["from-home"]


def test_a_transcript_that_is_a_fifo_is_refused_unopened(hook_env: str, home: Path) -> None:
    os.mkfifo("session.jsonl")  # opening it to read would block until someone writes

    result = run_hook(hook_input(Path("session.jsonl")))

    assert result.exit_code == 1
    assert "transcript_path" in said(result.stderr)
    assert "session.jsonl is not a regular file; refused" in said(result.stderr)


def test_a_transcript_over_the_size_limit_is_refused(
    hook_env: str, home: Path, clean_env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    transcript = claude_session(Path("a1.jsonl"), ZORB_TASK)
    clean_env.setattr("ace_workers.cli.hook.MAX_TRANSCRIPT_BYTES", transcript.stat().st_size - 1)

    result = run_hook(hook_input(transcript))

    assert result.exit_code == 1
    assert f"holds {transcript.stat().st_size} bytes, over the" in said(result.stderr)
    assert keys_of(redis_client, hook_env) == []


def test_hook_input_over_the_limit_is_refused_in_one_line(hook_env: str) -> None:
    result = run_hook("\0" * (MAX_HOOK_INPUT_BYTES + 1))

    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert f"the hook input is over {MAX_HOOK_INPUT_BYTES} bytes" in result.stderr


def test_an_endless_hook_input_is_refused_without_being_read_to_its_end(
    hook_env: str, tmp_path: Path
) -> None:
    total = 16 * MAX_HOOK_INPUT_BYTES
    hook = hook_process("ace-workers hook claude-code", tmp_path)
    written = 0

    def feed() -> None:
        nonlocal written
        assert hook.stdin is not None
        chunk = b"\0" * 65536
        try:
            while written < total:
                hook.stdin.write(chunk)
                written += len(chunk)
            hook.stdin.flush()
        except BrokenPipeError:  # the hook stopped reading and exited
            pass

    feeder = threading.Thread(target=feed)
    feeder.start()
    returncode, err = finish(hook)
    feeder.join()

    assert returncode == 1
    assert f"the hook input is over {MAX_HOOK_INPUT_BYTES} bytes" in err
    assert written < total


def test_hook_input_nested_too_deeply_under_the_size_limit_is_one_line_not_a_traceback(
    hook_env: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    hook = hook_process("ace-workers hook claude-code", tmp_path)
    assert hook.stdin is not None
    try:
        hook.stdin.write(b"[" * 200_000 + b"]" * 200_000)  # 400,000 bytes, under the 1 MiB cap
        hook.stdin.close()
    except BrokenPipeError:  # refused at the first chunk, the rest unread
        pass
    returncode, err = finish(hook)

    assert returncode == 1
    assert err.count("\n") == 1, err
    assert "ace-workers hook claude-code: the hook input: JSON nested deeper than 200 levels" in err
    assert keys_of(redis_client, hook_env) == []
