"""An apply costs O(touched skills): the same Redis commands on a 2,000-skill skillbook as on a small one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ace_workers.core import Skillbook, UpdateBatch, UpdateOperation
from ace_workers.distributed import RedisSkillbookStore, SnapshotCache


class Recorder:
    """Commands sent and reply bytes read by the connections of one client."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, ...]] = []
        self.reply_bytes = 0

    def clear(self) -> None:
        self.commands.clear()
        self.reply_bytes = 0

    def names(self) -> list[str]:
        return [command[0].upper() for command in self.commands]


def _size(reply: Any) -> int:
    if isinstance(reply, (bytes, str)):
        return len(reply)
    if isinstance(reply, dict):
        return sum(_size(k) + _size(v) for k, v in reply.items())
    if isinstance(reply, (list, tuple)):
        return sum(_size(item) for item in reply)
    return 8


def _text(part: Any) -> str:
    # A persisted compact snapshot is binary: shown, not decoded.
    return part.decode(errors="replace") if isinstance(part, bytes) else str(part)


def counting_connection_class(recorder: Recorder) -> type[redis.Connection]:
    class CountingConnection(redis.Connection):
        def send_command(self, *args: Any, **kwargs: Any) -> None:
            recorder.commands.append(tuple(_text(a) for a in args))
            super().send_command(*args, **kwargs)  # type: ignore[no-untyped-call]

        def pack_commands(self, commands: Any) -> Any:
            commands = list(commands)
            recorder.commands.extend(tuple(_text(a) for a in command) for command in commands)
            return super().pack_commands(commands)  # type: ignore[no-untyped-call]

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = super().read_response(*args, **kwargs)
            recorder.reply_bytes += _size(reply)
            return reply

    return CountingConnection


@pytest.fixture
def counted(redis_client: redis.Redis) -> Iterator[tuple[redis.Redis, Recorder]]:
    """A client of the test database that records every command it sends."""
    recorder = Recorder()
    kwargs = redis_client.connection_pool.connection_kwargs
    pool = redis.ConnectionPool(
        connection_class=counting_connection_class(recorder),
        host=kwargs.get("host", "127.0.0.1"),
        port=kwargs["port"],
        db=kwargs.get("db", 0),
        password=kwargs.get("password"),
        username=kwargs.get("username"),
    )
    client = redis.Redis(connection_pool=pool)
    yield client, recorder
    pool.disconnect()


def _store_with(client: redis.Redis, name: str, skills: int) -> RedisSkillbookStore:
    book = Skillbook()
    for number in range(skills):
        book.add_skill(f"topic{number % 20}", f"Lesson number {number}: check the {number}th corner case.")
    store = RedisSkillbookStore(client, name, snapshot_cache=SnapshotCache())
    store.import_skillbook(book)
    return store


BATCHES = {
    "tag": UpdateBatch(
        operations=[UpdateOperation(type="TAG", skill_id="topic3-00004", metadata={"helpful": 1})]
    ),
    "add": UpdateBatch(operations=[UpdateOperation(type="ADD", section="topic3", content="A new lesson")]),
    "duplicate add": UpdateBatch(
        operations=[
            UpdateOperation(
                type="ADD", section="topic3", content="lesson number 3: check the 3th corner case"
            )
        ]
    ),
    "update": UpdateBatch(
        operations=[UpdateOperation(type="UPDATE", skill_id="topic5-00006", content="Reworded")]
    ),
    "remove": UpdateBatch(operations=[UpdateOperation(type="REMOVE", skill_id="topic7-00008")]),
}

WHOLE_READS = {"HGETALL", "HKEYS", "HVALS", "HSCAN", "SCAN", "KEYS", "XRANGE", "XREVRANGE", "SORT", "DUMP"}


@pytest.mark.parametrize("kind", list(BATCHES))
def test_an_apply_costs_the_same_commands_on_2000_skills_as_on_20(
    counted: tuple[redis.Redis, Recorder], kind: str
) -> None:
    client, recorder = counted
    _load_scripts(client)
    small, large = _store_with(client, "small", 20), _store_with(client, "large", 2000)
    observed = {}
    for store in (small, large):
        recorder.clear()
        result = store.apply(BATCHES[kind], idempotency_key="batch-1:sample-1:epoch-1:apply")
        assert result.version == 2
        assert not result.report.skipped
        observed[store.name] = (recorder.names(), recorder.reply_bytes, list(recorder.commands))
    (small_names, small_bytes, _), (large_names, large_bytes, large_commands) = (
        observed["small"],
        observed["large"],
    )
    assert large_names == small_names  # the same commands, whatever the size
    assert not WHOLE_READS & set(large_names)
    assert len(large_names) <= 20
    # Replies are the touched skills and a few counters, never the 2,000 skills (~250 KB).
    assert large_bytes < 4_000
    assert abs(large_bytes - small_bytes) < 200
    skills_key = large.keys.skills
    for command in large_commands:
        if command[0].upper() == "HMGET" and command[1] == skills_key:
            assert len(command) - 2 <= 2  # at most the named skill and one allocated id
    # apply_reads.lua: the skill ids each call reads follow its keys and their count.
    id_counts = [
        int(command[3 + int(command[2])])
        for command in large_commands
        if command[0].upper() == "EVALSHA" and skills_key in command
    ]
    assert id_counts  # the reads went through the script (one server)
    assert sum(id_counts) <= 2  # at most the named skill and one allocated id


def _load_scripts(client: redis.Redis) -> None:
    """One apply on a skillbook of its own: the server knows the apply's scripts from then on (a
    first apply on a server that has not seen them loads them, a round trip more)."""
    _store_with(client, "warm-up", 1).apply(BATCHES["add"])


def _round_trips(commands: list[tuple[str, ...]]) -> list[str]:
    """The command names of each round trip: a MULTI ... EXEC is one (sent in one write)."""
    trips: list[str] = []
    in_multi = False
    for command in commands:
        name = command[0].upper()
        if not in_multi:
            trips.append(name)
        in_multi = (in_multi or name == "MULTI") and name != "EXEC"
    return trips


def test_an_add_reads_in_two_round_trips_under_its_watch(counted: tuple[redis.Redis, Recorder]) -> None:
    """The watched version and idempotency record come with the plan's first reads, and the id an ADD
    allocates is checked in one more script call: WATCH, two reads, then the MULTI."""
    client, recorder = counted
    _load_scripts(client)
    store = _store_with(client, "large", 200)
    recorder.clear()
    result = store.apply(BATCHES["add"], idempotency_key="batch-1:sample-1:epoch-1:apply")
    assert result.report.added == ["topic3-00201"]
    assert _round_trips(recorder.commands) == ["WATCH", "EVALSHA", "EVALSHA", "MULTI"]


def test_a_delivery_seen_before_is_read_with_the_first_reads_and_writes_nothing(
    counted: tuple[redis.Redis, Recorder],
) -> None:
    client, recorder = counted
    store = _store_with(client, "large", 200)
    key = "batch-1:sample-1:epoch-1:apply"
    first = store.apply(BATCHES["add"], idempotency_key=key)
    recorder.clear()
    again = store.apply(BATCHES["add"], idempotency_key=key)
    assert again.duplicate_delivery
    assert again.version == first.version
    assert "MULTI" not in recorder.names()
    assert store.version() == first.version


def test_a_snapshot_reads_everything_once_and_the_cache_then_reads_one_version(
    counted: tuple[redis.Redis, Recorder],
) -> None:
    client, recorder = counted
    store = _store_with(client, "large", 2000)
    recorder.clear()
    store.cached_snapshot()
    assert recorder.names().count("HGETALL") == 2  # skills and decisions, in one MULTI
    recorder.clear()
    version, book = store.cached_snapshot()
    assert "HGETALL" not in recorder.names()
    assert recorder.reply_bytes < 200
    assert (version, len(book)) == (1, 2000)
