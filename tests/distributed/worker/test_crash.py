"""Failure drill: a worker process killed with SIGKILL mid-batch loses nothing and applies nothing twice."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from ace_workers.distributed.service import build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import sample_key
from ace_workers.sim import make_tasks
from tests.support.processes import start_worker, stop, wait_until_served
from tests.support.waiting import wait_for

# Where kombu's Redis transport keeps the messages delivered and not yet acknowledged.
KOMBU_UNACKED_KEYS = ("unacked", "unacked_index")


def start_worker_process(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A real `ace-workers worker` process (prefork pool) serving all three queues, in its own session."""
    return start_worker(env, log, queues="execute,learn,write", pool="prefork", loglevel="INFO")


def step_of(raw: bytes) -> tuple[int, int, int]:
    """(epoch, sample, step index) of an ``ace.step`` message as kombu's Redis transport stores it."""
    message = json.loads(raw)
    if isinstance(message, list):  # an unacked entry: [message, exchange, routing key]
        message = message[0]
    _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
    return kwargs["epoch"], kwargs["sample_index"], kwargs["index"]


def unfinished_unacked_steps(
    client: redis.Redis, queues: list[str], finished: set[str]
) -> list[tuple[int, ...]]:
    """The unacknowledged steps whose work is not done: neither their sample nor their next step exists.

    A step is done once its sample is recorded finished (the last step) or its successor was
    sent (a later step of the same sample is queued or unacknowledged); its own message may
    still wait for its acknowledgement for a few milliseconds.
    """
    unacked = [step_of(raw) for raw in client.hvals(KOMBU_UNACKED_KEYS[0])]
    queued = [step_of(raw) for queue in queues for raw in client.lrange(queue, 0, -1)]
    return [
        (epoch, sample, index)
        for epoch, sample, index in unacked
        if sample_key(epoch, sample) not in finished
        and not any((e, s) == (epoch, sample) and i > index for e, s, i in unacked + queued)
    ]


def kill_holding_a_task(worker: subprocess.Popen[bytes], timeout: float, holds: Callable[[], bool]) -> None:
    """SIGKILL ``worker`` at a moment ``holds()`` (frozen first, so the moment holds while it is checked)."""

    def killed_holding() -> bool:
        os.killpg(worker.pid, signal.SIGSTOP)
        if holds():
            stop(worker, sig=signal.SIGKILL)
            return True
        os.killpg(worker.pid, signal.SIGCONT)
        return False

    wait_for(killed_holding, timeout, "the worker to hold the task the drill waits for", every=0.01)


@pytest.mark.slow
@pytest.mark.drill  # kills a worker process: with the drills, not in make test-fast
@pytest.mark.parametrize("kill_loses_its_tasks", [False, True], ids=["tasks-kept", "tasks-lost"])
def test_a_worker_killed_mid_batch_is_replaced_and_every_sample_completes_once(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str, kill_loses_its_tasks: bool
) -> None:
    prefix = f"crash{uuid.uuid4().hex[:6]}"
    values = {
        "ACE_REDIS_URL": redis_url,
        "ACE_QUEUE_PREFIX": prefix,
        "ACE_SIM_LATENCY_SECONDS": "0.5",
        "ACE_SIM_TRUST_THRESHOLD": "0",
        "ACE_VISIBILITY_TIMEOUT_SECONDS": "4",
        # A kill between kombu's BRPOP and its unacked record loses the message for good: the
        # waiting producer's reconciler sends it again after ~9 s without progress (4 s + backoff).
        "ACE_RETRY_BACKOFF_SECONDS": "0.5",
        "ACE_RECONCILE_INTERVAL_SECONDS": "2",
    }
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **values}
    settings = WorkerSettings.from_env(values)
    service = build_service(settings, redis_url=redis_url)
    log = tmp_path / "workers.log"
    traces = [
        {"question": t.question, "answer": "?", "ground_truth": t.ground_truth, "feedback": "Incorrect."}
        for t in make_tasks(6, seed=4, topics=3)
    ]

    first = start_worker_process(env, log)
    try:
        wait_until_served(service, ["learn", "write"])  # the producer refuses a batch no worker serves
        handle = service.producer.enqueue_traces(traces, "crashbook")
        # Kill the whole worker (parent and child) in the middle of the batch: some samples are done,
        # others have tasks reserved and unacknowledged.
        wait_for(
            lambda: handle.status().done >= 1,
            60,
            "a sample to finish",
            every=0.05,
            detail=lambda: f"worker log:\n{log.read_text()}",
        )
        if kill_loses_its_tasks:
            # Only a task whose step has not finished is lost work: one whose step is done (its
            # next step sent, or its sample recorded) would need no re-send, and none would come.
            queues = settings.all_queues()

            def holds() -> bool:
                finished = set(service.runtime.batches.records(handle.batch_id))
                return bool(unfinished_unacked_steps(redis_client, queues, finished))

            kill_holding_a_task(first, 60, holds)
            # What a kill between kombu's BRPOP and its unacked record leaves: the tasks are nowhere.
            assert redis_client.delete(*KOMBU_UNACKED_KEYS) == len(KOMBU_UNACKED_KEYS)
        else:
            kill_holding_a_task(first, 60, lambda: bool(redis_client.hlen(KOMBU_UNACKED_KEYS[0])))
        killed_at = handle.status()
        assert killed_at.done < len(traces), "the batch finished before the kill: nothing was tested"

        replacement = start_worker_process(env, log)
        try:
            # The producer waits through the gap while the replacement starts (ACE_WORKER_WAIT_SECONDS).
            # Redelivery of the killed task comes after the 4 s visibility timeout, not kombu's 100 s sweep;
            # a task the kill lost is sent again by the reconciler.
            status = handle.wait(timeout=60)
        finally:
            stop(replacement)
    finally:
        stop(first, sig=signal.SIGKILL)
        service.close()

    assert (status.done, status.failed) == (len(traces), 0), log.read_text()
    if kill_loses_its_tasks:
        assert service.runtime.batches.redrives(handle.batch_id), "the lost tasks were not sent again"
    book = service.runtime.store("crashbook").export()
    contents = [s.content for s in book.skills()]
    assert len(contents) == len(set(contents)) == 3, contents  # one rule per topic, none twice
    assert sorted(s.section for s in book.skills()) == ["flux", "quill", "zorb"]
