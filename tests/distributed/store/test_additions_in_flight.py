"""The ADDs learn slots announce before writing them: ordered, windowed, withdrawn, read defensively."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from ace_workers.core import Skillbook
from ace_workers.core.skill_lookup import PendingOperation
from ace_workers.distributed import RedisSkillbookStore
from ace_workers.distributed.store import additions_in_flight
from ace_workers.distributed.store.additions_in_flight import RedisAdditionsInFlight
from ace_workers.redaction.redactor import redactor_for
from tests.support.fixtures import server_or_cluster


@pytest.fixture(params=["server", "cluster"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """On one Redis and on Redis Cluster alike."""
    yield from server_or_cluster(request)


def adds(*contents: str, section: str = "zorb") -> list[PendingOperation]:
    return [PendingOperation(proposal_id="", type="ADD", section=section, content=c) for c in contents]


def contents(operations: list[PendingOperation]) -> list[str]:
    return [op.content for op in operations]


def test_each_announcement_sees_the_ones_before_it_oldest_first_and_not_itself(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    in_flight = RedisAdditionsInFlight(redis_client, store.keys)
    first = in_flight.announce(adds("Reverse the digits.", "Zorb: reverse."))
    second = in_flight.announce(adds("Zorb puzzles want the digits backwards."))
    third = in_flight.announce(adds("Double quill inputs.", section="quill"))
    assert first.earlier == []
    assert contents(second.earlier) == ["Reverse the digits.", "Zorb: reverse."]
    assert contents(third.earlier) == [
        "Reverse the digits.",
        "Zorb: reverse.",
        "Zorb puzzles want the digits backwards.",
    ]
    assert {op.proposal_id for op in third.earlier} == {first.entry_id, second.entry_id}
    assert [op.section for op in third.earlier] == ["zorb", "zorb", "zorb"]
    assert (
        0 < redis_client.pttl(store.keys.additions_in_flight) <= additions_in_flight.IN_FLIGHT_SECONDS * 1000
    )


def test_a_withdrawn_announcement_is_seen_by_no_later_one(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    in_flight = RedisAdditionsInFlight(redis_client, store.keys)
    kept = in_flight.announce(adds("Reverse the digits."))
    withdrawn = in_flight.announce(adds("Zorb: digits backwards."))
    in_flight.withdraw(withdrawn)
    later = in_flight.announce(adds("Zorb: read the number right to left."))
    assert [op.proposal_id for op in later.earlier] == [kept.entry_id]


def test_announcements_older_than_the_window_are_over(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    in_flight = RedisAdditionsInFlight(redis_client, store.keys, window_seconds=0.2)
    in_flight.announce(adds("Reverse the digits."))
    time.sleep(0.3)
    recent = in_flight.announce(adds("Zorb: digits backwards."))
    assert recent.earlier == []
    assert contents(in_flight.announce(adds("Zorb: right to left.")).earlier) == ["Zorb: digits backwards."]


def test_of_concurrent_announcements_exactly_one_sees_none_and_each_sees_all_before_it(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    in_flight = RedisAdditionsInFlight(redis_client, store.keys)
    start = threading.Barrier(8)
    seen: dict[str, int] = {}

    def announce(number: int) -> None:
        start.wait()
        announcement = in_flight.announce(adds(f"Zorb: reverse the digits ({number})."))
        seen[announcement.entry_id] = len(announcement.earlier)

    threads = [threading.Thread(target=announce, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # In stream order, the n-th announcement saw the n before it: one saw none, none saw itself.
    assert [seen[entry_id] for entry_id in sorted(seen, key=_stream_order)] == list(range(8))


def _stream_order(entry_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = entry_id.partition("-")
    return int(milliseconds), int(sequence)


def test_an_entry_that_does_not_decode_is_passed_over_with_a_warning_naming_it(
    store: RedisSkillbookStore, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("WARNING", logger=additions_in_flight.__name__)
    in_flight = RedisAdditionsInFlight(redis_client, store.keys)
    good = in_flight.announce(adds("Reverse the digits."))
    bad_ids = [
        redis_client.xadd(store.keys.additions_in_flight, fields).decode()  # type: ignore[arg-type, union-attr]
        for fields in (
            {"adds": "{not json"},
            {"adds": '[{"section": "zorb"}]'},
            {"adds": '[{"section": "zorb", "content": "  "}]'},
            {"other": "x"},
        )
    ]
    later = in_flight.announce(adds("Zorb: backwards."))
    assert [op.proposal_id for op in later.earlier] == [good.entry_id]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == len(bad_ids)
    for entry_id, warning in zip(bad_ids, warnings, strict=True):
        assert warning.startswith(f"{store.keys.additions_in_flight} entry {entry_id}:"), warning


def test_deleting_the_skillbook_deletes_its_announcements(
    store: RedisSkillbookStore, redis_client: redis.Redis
) -> None:
    store.import_skillbook(Skillbook())
    RedisAdditionsInFlight(redis_client, store.keys).announce(adds("Reverse the digits."))
    assert redis_client.exists(store.keys.additions_in_flight)
    store.delete()
    assert not redis_client.exists(store.keys.additions_in_flight)


def test_what_is_announced_is_stored_redacted(store: RedisSkillbookStore, redis_client: redis.Redis) -> None:
    redact = redactor_for(None).text
    in_flight = RedisAdditionsInFlight(redis_client, store.keys, redact=redact)
    in_flight.announce(adds("Mail jane.roe@example.org before refunding."))
    stored = redis_client.xrange(store.keys.additions_in_flight)[0][1][b"adds"]  # type: ignore[index]
    assert b"jane.roe@example.org" not in stored and b"<EMAIL_1>" in stored
    assert contents(in_flight.announce(adds("Mail first.")).earlier) == ["Mail <EMAIL_1> before refunding."]
