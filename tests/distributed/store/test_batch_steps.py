"""A batch's per-step figures and the index of recent batches, on the real Redis.

Each step run of a sample is counted once (a redelivered or re-sent copy is not), the last
step with the sample's record, a failure at the step it failed at and no longer once its
dead letter reopens the sample; nothing is written for a cancelled batch. The index of
recent batches lists the newest first, keeps at most RECENT_BATCHES, and drops expired ones.
"""

from __future__ import annotations

import pytest
import redis

from ace_workers.distributed.store import batches as batches_module
from ace_workers.distributed.store.batches import BatchStore
from ace_workers.distributed.store.keys import batch_key, recent_batches_key
from ace_workers.distributed.store.step_stats import StepRun, read_step_stats, run_from_message

PREFIX = "steps"


@pytest.fixture
def batches(redis_client: redis.Redis) -> BatchStore:
    return BatchStore(redis_client, prefix=PREFIX, ttl_seconds=3600)


def created(batches: BatchStore, batch_id: str, samples: int = 2) -> str:
    """A batch of ``samples`` samples of a two-step recipe, every one sent."""
    batches.create(
        batch_id, skillbook="book", recipe="trace_analyser", per_epoch=samples, epochs=1, skills_at_start=0
    )
    for index in range(1, samples + 1):
        batches.record_sent(batch_id, 1, index)
    return batch_id


def run(
    index: int, seconds: float = 0.5, *, tokens: tuple[int, int] = (0, 0), cost: float | None = None
) -> StepRun:
    return StepRun(index, f"Step{index}", seconds, tokens[0], tokens[1], cost)


def test_each_step_counts_each_sample_once_with_its_time_and_tokens(batches: BatchStore) -> None:
    created(batches, "b")
    for sample in (1, 2):
        assert batches.record_step("b", 1, sample, run(0, 0.25, tokens=(100, 20), cost=0.5))
        batches.record_done("b", 1, sample, {"trace": {}}, step=run(1, 1.0, tokens=(10, 5)))

    first, last = batches.step_stats("b")

    assert (first.name, first.done, first.failed) == ("Step0", 2, 0)
    assert first.seconds == pytest.approx(0.5)
    assert (first.prompt_tokens, first.completion_tokens) == (200, 40)
    assert first.cost == pytest.approx(1.0)
    assert (last.name, last.done, last.mean_seconds) == ("Step1", 2, pytest.approx(1.0))
    assert last.cost is None  # nothing of that step was priced


def test_a_second_copy_of_a_step_run_counts_nothing(batches: BatchStore) -> None:
    created(batches, "b")
    assert batches.record_step("b", 1, 1, run(0)) is True
    assert batches.record_step("b", 1, 1, run(0)) is False  # redelivered
    batches.record_done("b", 1, 1, {"trace": {}}, step=run(1))
    assert batches.record_step("b", 1, 1, run(0)) is False  # a re-sent copy running late
    assert [stats.done for stats in batches.step_stats("b")] == [1, 1]


def test_the_next_step_counts_the_run_before_it_as_it_starts_once(batches: BatchStore) -> None:
    created(batches, "b")
    assert batches.record_progress(
        "b", 1, 1, first_step=False, previous=run(0, 0.25, tokens=(100, 20), cost=0.5)
    )
    assert batches.record_progress("b", 1, 1, first_step=False, previous=run(0, 0.25))  # redelivered

    (first,) = batches.step_stats("b")

    assert (first.name, first.done, first.seconds) == ("Step0", 1, pytest.approx(0.25))
    assert (first.prompt_tokens, first.completion_tokens, first.cost) == (100, 20, pytest.approx(0.5))


def test_a_run_carried_to_a_cancelled_or_finished_batch_is_not_counted(
    batches: BatchStore, redis_client: redis.Redis
) -> None:
    created(batches, "b", samples=1)
    batches.record_done("b", 1, 1, {"trace": {}}, step=run(1))
    batches.record_progress("b", 1, 1, first_step=False, previous=run(0))  # a late copy of a finished batch
    assert [(stats.index, stats.done) for stats in batches.step_stats("b")] == [(1, 1)]  # step 0: none

    created(batches, "c")
    batches.cancel("c")
    assert batches.record_progress("c", 1, 1, first_step=False, previous=run(0)) is False
    assert redis_client.exists(batch_key(PREFIX, "c", "steps")) == 0


def test_a_run_a_message_carries_is_read_back_only_when_it_is_one() -> None:
    carried = run(1, 0.5, tokens=(3, 4), cost=0.25)

    assert run_from_message(carried.to_message(), 1) == carried
    assert run_from_message(carried.to_message(), 2) is None  # not the step before the one running
    for hostile in (
        None,
        "x",
        [1],
        [1, "S", -1.0, 0, 0, None],
        [1, "S", 0.5, True, 0, None],
        [1, "", 0.5, 0, 0, None],
        [1, "S", float("nan"), 0, 0, None],
        [1, "S", 0.5, 0, 0, "cheap"],
        [True, "S", 0.5, 0, 0, None],
    ):
        assert run_from_message(hostile, 1) is None, hostile


def test_a_failure_counts_at_its_step_and_leaves_it_when_the_letter_reopens_the_sample(
    batches: BatchStore,
) -> None:
    created(batches, "b")
    batches.record_step("b", 1, 1, run(0))
    batches.record_failure("b", 1, 1, step="Step1", error="boom", step_index=1)
    assert [(stats.done, stats.failed) for stats in batches.step_stats("b")] == [(1, 0), (0, 1)]

    assert batches.reopen("b", 1, 1)
    assert [(stats.done, stats.failed) for stats in batches.step_stats("b")] == [(1, 0), (0, 0)]
    batches.record_done("b", 1, 1, {"trace": {}}, step=run(1))
    assert [(stats.done, stats.failed) for stats in batches.step_stats("b")] == [(1, 0), (1, 0)]


def test_a_failure_no_step_names_counts_at_no_step(batches: BatchStore) -> None:
    created(batches, "b")
    batches.record_failure("b", 1, 1, step="reconciler", error="no progress")
    assert batches.reopen("b", 1, 1)
    assert batches.step_stats("b") == []


def test_a_cancelled_or_unknown_batch_gets_no_step_key(
    batches: BatchStore, redis_client: redis.Redis
) -> None:
    created(batches, "b")
    batches.cancel("b")
    assert batches.record_step("b", 1, 1, run(0)) is False
    assert batches.record_step("gone", 1, 1, run(0)) is False
    assert redis_client.exists(batch_key(PREFIX, "b", "steps"), batch_key(PREFIX, "gone", "steps")) == 0


def test_the_step_keys_expire_with_the_finished_batch(batches: BatchStore, redis_client: redis.Redis) -> None:
    created(batches, "b", samples=1)
    batches.record_step("b", 1, 1, run(0))
    batches.record_done("b", 1, 1, {"trace": {}}, step=run(1))
    for part in ("steps", "stepped"):
        assert 0 < redis_client.ttl(batch_key(PREFIX, "b", part)) <= 3600, part


def test_an_odd_field_in_the_steps_hash_is_left_out() -> None:
    stats = read_step_stats({b"0:done": b"3", b"0:seconds": b"not a number", b"junk": b"1", b"x:done": b"1"})
    assert [(s.index, s.done, s.seconds) for s in stats] == [(0, 3, 0.0)]


def test_recent_lists_the_newest_batches_first_finished_ones_too(batches: BatchStore) -> None:
    for name in ("old", "middle", "new"):
        created(batches, name, samples=1)
    batches.record_done("old", 1, 1, {"trace": {}})

    assert [batch_id for batch_id, _ in batches.recent(10)] == ["new", "middle", "old"]
    assert [batch_id for batch_id, _ in batches.recent(2)] == ["new", "middle"]


def test_recent_drops_a_batch_whose_keys_expired(batches: BatchStore, redis_client: redis.Redis) -> None:
    for name in ("kept", "expired"):
        created(batches, name, samples=1)
    redis_client.delete(batch_key(PREFIX, "expired"))

    assert [batch_id for batch_id, _ in batches.recent(10)] == ["kept"]
    assert redis_client.zscore(recent_batches_key(PREFIX), "expired") is None


def test_the_index_keeps_the_newest_only(
    batches: BatchStore, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batches_module, "RECENT_BATCHES", 3)
    for number in range(5):
        created(batches, f"b{number}", samples=1)
    assert redis_client.zcard(recent_batches_key(PREFIX)) == 3
    assert [batch_id for batch_id, _ in batches.recent(10)] == ["b4", "b3", "b2"]


def _read_two(redis_client: redis.Redis) -> list[str]:
    redis_client.set("other:version", "7")
    redis_client.hset("other:meta", "incarnation", "inc-1")
    return ["other:version", "other:meta"]


def test_a_steps_start_reads_what_it_is_asked_to_in_the_same_round_trip(
    batches: BatchStore, redis_client: redis.Redis
) -> None:
    """record_progress_and_read counts the start as record_progress does and hands back the replies of
    the reads it queued (one transaction, so they agree); a server that lost its scripts is given it."""
    created(batches, "b")
    version_key, meta_key = _read_two(redis_client)

    def reads(pipe: redis.client.Pipeline) -> None:
        pipe.get(version_key)
        pipe.hget(meta_key, "incarnation")

    runs, replies = batches.record_progress_and_read(
        "b", 1, 1, first_step=False, previous=run(0), reads=reads
    )
    assert runs is True
    assert replies == [b"7", b"inc-1"]
    redis_client.script_flush()
    runs, replies = batches.record_progress_and_read("b", 1, 2, first_step=True, previous=run(0), reads=reads)
    assert (runs, replies) == (True, [b"7", b"inc-1"])
    assert [(stats.index, stats.done) for stats in batches.step_stats("b")] == [(0, 2)]
    assert batches.status("b").started == 1


def test_a_cancelled_batchs_step_start_says_so_and_no_reads_read_nothing(batches: BatchStore) -> None:
    created(batches, "c")
    batches.cancel("c")
    assert batches.record_progress_and_read("c", 1, 1, first_step=True, reads=None) == (False, None)
