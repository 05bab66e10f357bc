"""Bad input gets one line naming the problem, exit status 2, and changes nothing: never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.distributed import WorkerSettings
from ace_workers.distributed.store.store import RedisSkillbookStore
from ace_workers.distributed.worker.payload import PayloadError, check_trace
from tests.support.cli import invoke, keys_of, write_traces
from tests.support.schema0 import stamp_current_schema

PREFIX = "clibad"
# Deeper than Python's JSON decoder can go (its recursion limit), on one line.
TOO_DEEP = '{"question": "q", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}\n"


@pytest.fixture
def cli_settings() -> dict[str, str]:
    """``env`` (tests/support/cli_env.py) under this module's prefix."""
    return {"ACE_QUEUE_PREFIX": PREFIX}


@pytest.fixture
def cli_stamped() -> bool:
    """Unstamped: these tests check that a refused command wrote nothing at all."""
    return False


@pytest.mark.parametrize("command", [["enqueue"], ["nightly", "add"]])
def test_a_line_nested_too_deeply_is_named_and_skipped_not_a_traceback(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, command: list[str]
) -> None:
    Path("deep.jsonl").write_text(TOO_DEEP)
    code, output = invoke(*command, "deep.jsonl", "--skillbook", "book")
    assert code == 2
    assert "skipped 1 line of deep.jsonl: line 1 (not JSON: nested too deeply to read)" in output
    assert "deep.jsonl holds no usable line" in output
    assert keys_of(redis_client, PREFIX) == []


@pytest.mark.parametrize("command", [["enqueue"], ["nightly", "add"]])
def test_a_null_trace_is_refused_at_enqueue_naming_its_line(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, command: list[str]
) -> None:
    write_traces(Path("traces.jsonl"), 2)
    with Path("traces.jsonl").open("a") as handle:
        handle.write("null\n")
    code, output = invoke(*command, "traces.jsonl", "--skillbook", "book")
    assert code == 2
    assert "traces.jsonl:3: trace is null: a trace is any JSON value but null" in output
    assert keys_of(redis_client, PREFIX) == []  # nothing sent, nothing added to an inbox


def test_nightly_add_refuses_a_file_with_no_usable_line_like_enqueue(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    Path("empty.jsonl").write_text("\n")
    assert invoke("enqueue", "empty.jsonl")[0] == 2
    code, output = invoke("nightly", "add", "empty.jsonl")
    assert code == 2
    assert "empty.jsonl holds no usable line" in output


def test_nightly_add_streams_a_good_file_into_the_inbox(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    write_traces(Path("traces.jsonl"), 3)
    code, output = invoke("nightly", "add", "traces.jsonl", "--skillbook", "book")
    assert code == 0
    assert "3 traces added to the inbox of 'book'" in output


def export_setup(redis_client: redis.Redis) -> None:
    book = Skillbook()
    book.add_skill("general", "Check units before answering.")
    RedisSkillbookStore(redis_client, "book", prefix=PREFIX).import_skillbook(book)
    stamp_current_schema(redis_client, PREFIX)  # as this version's first process did


def test_export_to_a_folder_is_refused_before_anything_is_read(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, tmp_path: Path
) -> None:
    export_setup(redis_client)
    (tmp_path / "out").mkdir()
    code, output = invoke("skillbook", "export", "book", "--out", "out")
    assert code == 2
    assert "out is a folder: name a file to write" in output
    assert list((tmp_path / "out").iterdir()) == []


def test_export_that_fails_while_writing_names_the_path_and_leaves_nothing_half_written(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, tmp_path: Path
) -> None:
    export_setup(redis_client)
    Path("book.json").write_text("the old file")
    env.setattr("ace_workers.core.files.os.replace", _refuse)
    code, output = invoke("skillbook", "export", "book", "--out", "book.json")
    assert code == 2
    assert "cannot write book.json: Read-only file system" in output
    assert Path("book.json").read_text() == "the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.json"]  # no temp file left


def _refuse(source: str, target: str) -> None:
    raise OSError(30, "Read-only file system")


@pytest.mark.parametrize(
    ("trace", "problem"),
    [(None, "trace is null"), (json.loads("[" * 900 + "]" * 900), "")],
)
def test_check_trace_refuses_null_and_takes_a_deep_but_readable_trace(trace: object, problem: str) -> None:
    settings = WorkerSettings()
    if problem:
        with pytest.raises(PayloadError, match=problem):
            check_trace(trace, max_bytes=settings.max_trace_bytes)
    else:
        assert check_trace(trace, max_bytes=settings.max_trace_bytes) == 1800


@pytest.mark.parametrize("command", ["enqueue", "learn"])
def test_an_endless_batch_is_refused_before_the_file_is_read(
    env: pytest.MonkeyPatch, redis_client: redis.Redis, command: str
) -> None:
    write_traces(Path("traces.jsonl"), 3)
    code, output = invoke(command, "traces.jsonl", "--epochs", "1000000000000")
    assert code == 2
    assert "1000000000000 epochs is above ACE_MAX_BATCH_SIZE=1000000 samples" in output
    assert keys_of(redis_client, PREFIX) == []


def test_inputs_times_epochs_over_the_limit_is_refused_naming_both(
    env: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    env.setenv("ACE_MAX_BATCH_SIZE", "10")
    write_traces(Path("traces.jsonl"), 4)
    code, output = invoke("enqueue", "traces.jsonl", "--epochs", "3")
    assert code == 2
    assert "traces.jsonl holds 4 inputs x 3 epochs = 12 samples, above ACE_MAX_BATCH_SIZE=10" in output
    assert keys_of(redis_client, PREFIX) == []
