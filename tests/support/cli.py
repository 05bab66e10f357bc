"""Reading what the CLI said, and the inputs and Redis keys of CLI runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from typer.core import TyperGroup
from typer.testing import CliRunner

from ace_workers.cli import app, main
from ace_workers.core import Skillbook
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.sim import make_tasks
from tests.support.processes import CLI
from tests.support.schema0 import stamp_current_schema


def said(output: str) -> str:
    """The output as one line: rich wraps long lines, and draws a box around usage errors."""
    return " ".join(output.translate(str.maketrans("", "", "│╭╮╰╯─")).split())


def command_paths(group: TyperGroup, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The argv of every command and group below ``group``, ``group`` itself first."""
    yield path
    for name, command in group.commands.items():
        if isinstance(command, TyperGroup):
            yield from command_paths(command, (*path, name))
        else:
            yield (*path, name)


def keys_of(client: redis.Redis, prefix: str) -> list[bytes]:
    """The keys under ``prefix`` (kombu's bookkeeping keys left out)."""
    return [key for key in client.scan_iter(match=f"*{prefix}*") if not key.startswith(b"_kombu")]


def env_with_one_skillbook(
    env: pytest.MonkeyPatch, redis_url: str, client: redis.Redis, prefix: str
) -> pytest.MonkeyPatch:
    """``env`` pointing the CLI at ``redis_url`` under ``prefix``, where skillbook "book" holds one skill.

    Written as a process of this version writes it: with the schema stamp.
    """
    env.setenv("ACE_REDIS_URL", redis_url)
    env.setenv("ACE_QUEUE_PREFIX", prefix)
    book = Skillbook()
    book.add_skill("general", "Check units before answering.")
    RedisSkillbookStore(client, "book", prefix=prefix).import_skillbook(book)
    stamp_current_schema(client, prefix)
    return env


def write_traces(path: Path, n: int, bad_line_at: int | None = None) -> Path:
    """A JSONL file of ``n`` recorded failures on three topics, a line of bad JSON at ``bad_line_at``."""
    lines = [
        json.dumps(
            {"question": t.question, "answer": "?", "ground_truth": t.ground_truth, "feedback": "Incorrect."}
        )
        for t in make_tasks(n, seed=2, topics=3)
    ]
    if bad_line_at is not None:
        lines.insert(bad_line_at - 1, "{not json")
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass(frozen=True)
class Ran:
    """What a command run through main() said, and its exit status."""

    code: int
    out: str
    err: str


def run_console_script(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> Ran:
    """Run ``ace-workers ARGS`` in-process as its console script does (main(): errors end as one line)."""
    monkeypatch.setattr(sys, "argv", ["ace-workers", *args])
    with pytest.raises(SystemExit) as ended:
        main()
    captured = capsys.readouterr()
    code = ended.value.code
    return Ran(code if isinstance(code, int) else 1, captured.out, captured.err)


def run_cli_process(*args: str, timeout: float = 60, stdin: str | None = None) -> Ran:
    """Run ``ace-workers ARGS`` as a process of its own (this interpreter, this environment).

    subprocess.TimeoutExpired (the process killed) if it runs past ``timeout`` seconds.
    """
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def invoke(*args: str) -> tuple[int, str]:
    """Run the CLI in this process (CliRunner): its exit code and its output, whitespace joined.

    An exception other than the exit is a failure of the test, not an answer of the command.
    """
    code, output = invoke_raw(*args)
    return code, said(output)


def invoke_raw(*args: str) -> tuple[int, str]:
    """Like invoke, the output as printed (JSON to parse, lines and tables to read)."""
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output
