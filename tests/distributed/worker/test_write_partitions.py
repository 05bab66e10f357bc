"""Write partitions: a skillbook's writes on its partition's one writer, real Redis, real workers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from typer.testing import CliRunner

from ace_workers.cli import app as cli
from ace_workers.distributed.producer.errors import NoWorkersError, PartitionMismatchError
from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings, write_partition
from ace_workers.distributed.worker.errors import WritePartitionsChanged
from ace_workers.distributed.worker.partitions import check_partition_count, recorded_partitions
from ace_workers.sim import failure_traces
from tests.support.cli import said
from tests.support.recipes import TEST_RECIPES
from tests.support.workers import running_service

TIMEOUT = 90


def skillbooks_on(partition: int, partitions: int, count: int) -> list[str]:
    """``count`` skillbook names whose writes go to ``partition``."""
    names = (f"book-{n}" for n in range(10_000))
    return [name for name in names if write_partition(name, partitions) == partition][:count]


def settings_for(redis_url: str, partitions: int, prefix: str | None = None) -> WorkerSettings:
    return WorkerSettings(
        redis_url=redis_url,
        queue_prefix=prefix or f"t{uuid.uuid4().hex[:8]}",
        sim_trust_threshold=0,
        recipes=TEST_RECIPES,
        write_partitions=partitions,
        # A waiting producer gives up on a queue no worker serves after this long (not 300 s).
        worker_wait_seconds=2,
    )


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    built = build_service(settings_for(redis_url, 2), redis_url=redis_url)
    try:
        yield built
    finally:
        built.close()


def test_the_partition_of_a_skillbook_is_the_same_in_every_process_and_spreads_them() -> None:
    # CRC-32, not Python's per-process hash(): a fixed value every process agrees on.
    assert write_partition("support", 4) == 1
    spread = {write_partition(f"book-{n}", 4) for n in range(40)}
    assert spread == {0, 1, 2, 3}
    settings = WorkerSettings(write_partitions=4)
    assert settings.write_queues() == ["ace.write.0", "ace.write.1", "ace.write.2", "ace.write.3"]
    assert settings.write_queue("support") == "ace.write.1"
    assert WorkerSettings().write_queues() == ["ace.write"]  # one partition: today's queue name


def test_eight_skillbooks_learn_end_to_end_through_two_write_partitions(
    redis_client: redis.Redis, redis_url: str
) -> None:
    books = skillbooks_on(0, 2, 4) + skillbooks_on(1, 2, 4)
    with running_service(redis_url, write_partitions=2) as service:
        handles = {book: service.producer.enqueue_traces(failure_traces(5), book) for book in books}
        for book, handle in handles.items():
            status = handle.wait(timeout=TIMEOUT)
            assert (status.done, status.failed) == (5, 0), book
            assert len(service.runtime.store(book).export()) == 5, book


def test_a_skillbook_waits_for_its_own_partitions_writer_and_no_other_takes_its_writes(
    service: Service,
) -> None:
    first, second = skillbooks_on(0, 2, 1)[0], skillbooks_on(1, 2, 1)[0]
    prefix = service.runtime.settings.queue_prefix
    with local_workers(service, write_queues=[f"{prefix}.write.0"]):
        on_first = service.producer.enqueue_traces(failure_traces(3), first)
        on_second = service.producer.enqueue_traces(failure_traces(3), second)
        assert on_first.wait(timeout=TIMEOUT).done == 3
        # Partition 1 has no writer: the second skillbook's writes wait in its queue, and a
        # caller waiting for them is told so once none came for ACE_WORKER_WAIT_SECONDS.
        with pytest.raises(NoWorkersError, match=rf"no worker serves {prefix}\.write\.1 ") as raised:
            on_second.wait(timeout=TIMEOUT)
        assert "no worker came for 2 s, ACE_WORKER_WAIT_SECONDS" in str(raised.value)
        assert service.runtime.store(second).version() == 0
        assert service.runtime.redis.llen(f"{prefix}.write.1") > 0
    with local_workers(service):
        assert on_second.wait(timeout=TIMEOUT).done == 3


def test_the_partition_count_changes_only_when_every_queue_is_drained(
    redis_client: redis.Redis, redis_url: str
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    one = build_service(settings_for(redis_url, 1, prefix), redis_url=redis_url)
    two = build_service(settings_for(redis_url, 2, prefix), redis_url=redis_url)
    try:
        check_partition_count(one.dispatcher)
        assert recorded_partitions(redis_client, one.runtime.settings) == 1
        handle = one.producer.enqueue_traces(failure_traces(2), "book")  # in the learn queue: no worker
        with pytest.raises(WritePartitionsChanged, match=r"runs with 1 .* t\w+\.learn \(2\): drain first"):
            check_partition_count(two.dispatcher)
        assert recorded_partitions(redis_client, one.runtime.settings) == 1  # unchanged
        # A worker that is no writer never changes the count, and runs only with the fleet's.
        with pytest.raises(WritePartitionsChanged, match="the fleet's writers run with 1: set the same"):
            check_partition_count(two.dispatcher, writer=False)
        check_partition_count(one.dispatcher, writer=False)
        # A producer routing for another count than the workers' is refused, nothing sent.
        before = redis_client.llen(f"{prefix}.learn")
        with pytest.raises(
            PartitionMismatchError, match="ACE_WRITE_PARTITIONS=2 here, but the workers run with 1"
        ):
            two.producer.enqueue_traces(failure_traces(2), "book")
        assert redis_client.llen(f"{prefix}.learn") == before
        with local_workers(one):  # drained by the fleet of the recorded count
            assert handle.wait(timeout=TIMEOUT).done == 2
        check_partition_count(two.dispatcher)
        assert recorded_partitions(redis_client, one.runtime.settings) == 2
    finally:
        one.close()
        two.close()


def test_a_writer_must_say_which_partition_it_serves(
    monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    monkeypatch.setenv("ACE_REDIS_URL", redis_url)
    monkeypatch.setenv("ACE_WRITE_PARTITIONS", "3")
    runner = CliRunner()
    cases = {
        (
            "--queues",
            "write",
        ): "a writer serves one partition; add --partition K (0 to 2) or use --queues write.K",
        (
            "--queues",
            "write",
            "--partition",
            "3",
        ): "--partition 3: ACE_WRITE_PARTITIONS=3 has partitions 0 to 2",
        ("--queues", "learn", "--partition", "1"): "--partition is for a writer",
        ("--queues", "write.5"): "unknown queue role ['write.5'] with ACE_WRITE_PARTITIONS=3",
        ("--queues", "write.1", "--concurrency", "2"): "refusing to serve the write queue 'ace.write.1' "
        "with concurrency 2",
    }
    for args, message in cases.items():
        result = runner.invoke(cli, ["worker", *args])
        assert result.exit_code != 0, args
        shown = said(result.output) + (str(result.exception) if result.exception else "")
        assert message in shown, (args, shown)


def test_status_names_the_batchs_write_queue_and_warns_when_no_writer_serves_it(
    monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis, redis_url: str
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}"
    for name, value in {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": prefix,
        "ACE_WRITE_PARTITIONS": "2",
        "ACE_SIM_TRUST_THRESHOLD": "0",
    }.items():
        monkeypatch.setenv(name, value)
    served, unserved = skillbooks_on(0, 2, 1)[0], skillbooks_on(1, 2, 1)[0]
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, write_queues=[f"{prefix}.write.0"]):
            handles = {
                book: service.producer.enqueue_traces(failure_traces(1), book) for book in (served, unserved)
            }
            assert handles[served].wait(timeout=TIMEOUT).done == 1
            shown = {served: status_of(handles[served].batch_id)}
            # Nobody will answer for the other partition's queue: no need to wait the default 3 s.
            monkeypatch.setenv("ACE_WORKER_REPLY_SECONDS", "0.5")
            shown[unserved] = status_of(handles[unserved].batch_id)
    finally:
        service.close()
    assert (
        f"writes of '{served}' go to {prefix}.write.0 (partition 0 of 2, served by write.0-" in shown[served]
    )
    assert (
        f"writes of '{unserved}' go to {prefix}.write.1 (partition 1 of 2, no worker serves it: start one "
        "with 'ace-workers worker --queues write --partition 1 --concurrency 1')"
    ) in shown[unserved]


def status_of(batch_id: str) -> str:
    """What ``ace-workers status BATCH`` prints, on one line."""
    return said(CliRunner().invoke(cli, ["status", batch_id]).output)
