"""A Redis out of memory is one line from the CLI, not a traceback (issue 23: 289 lines from enqueue)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from ace_workers.cli.root import redis_error_line
from ace_workers.distributed.service import build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.sim import failure_traces
from tests.support.cli import Ran, run_console_script, write_traces
from tests.support.drills.scenarios import fill_until_out_of_memory
from tests.support.servers import PrivateRedis

pytestmark = pytest.mark.slow  # a redis-server of its own, filled to its maxmemory


@dataclass(frozen=True)
class FullRedis:
    url: str
    batch_id: str  # of a batch enqueued before Redis filled up


@pytest.fixture
def full_redis(tmp_path: Path) -> Iterator[FullRedis]:
    """A private Redis that refuses every write (maxmemory reached, no eviction), holding a batch."""
    with PrivateRedis(tmp_path / "redis", persistent=False, maxmemory="4mb") as server:
        service = build_service(WorkerSettings.from_env({}), redis_url=server.url)
        try:
            batch_id = service.producer.enqueue_traces(failure_traces(2), "book").batch_id
        finally:
            service.close()
        client = redis.Redis.from_url(server.url)
        assert fill_until_out_of_memory(client) > 0
        client.close()
        yield FullRedis(server.url, batch_id)


@pytest.fixture
def ace(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], full_redis: FullRedis
) -> Callable[..., Ran]:
    clean_env.setenv("ACE_REDIS_URL", full_redis.url)
    return lambda *args: run_console_script(clean_env, capsys, *args)


def assert_one_line_about_memory(ran: Ran) -> None:
    assert ran.code == 1, ran
    lines = ran.err.splitlines()
    assert len(lines) == 1, ran.err
    assert lines[0].startswith("error: Redis is out of memory"), lines[0]
    assert "maxmemory" in lines[0]
    assert "Traceback" not in ran.out + ran.err


def test_status_reads_a_full_redis(ace: Callable[..., Ran], full_redis: FullRedis) -> None:
    # status only reads (a FleetClient, no Celery service declaring queues): a full Redis still answers.
    ran = ace("status", full_redis.batch_id)
    assert ran.code == 0, ran
    assert ran.out.startswith(f"batch {full_redis.batch_id} on 'book'"), ran.out


def test_enqueue_on_a_full_redis_says_so_in_one_line(ace: Callable[..., Ran], tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "t.jsonl", 2)
    assert_one_line_about_memory(ace("enqueue", str(traces), "--skillbook", "book"))


def test_another_refusal_of_redis_is_named_with_its_control_characters_escaped() -> None:
    line = redis_error_line(redis.ReadOnlyError("You can't write against a read only replica.\x1b]0;x\x07"))
    assert line.startswith("Redis refused a command: ReadOnlyError: You can't write against a read only")
    assert "\x1b" not in line
    assert "\\x1b" in line
