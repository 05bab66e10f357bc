"""The failure drills of issue 6, each a function returning its Outcome.

tests/drills/test_drills.py asserts on the outcomes; benchmarks/drills.py prints them.
Each scenario starts its own redis-server and worker processes under ``directory``
and stops them before it returns.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from ace_workers.distributed.connections import is_amqp
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service
from ace_workers.distributed.store.batches import BatchStatus
from ace_workers.distributed.store.keys import batch_key
from tests.support.servers import PrivateRedis, free_port
from tests.support.waiting import wait_for

from .harness import (
    CLI,
    REPO,
    Fleet,
    Outcome,
    check_book,
    count_dead_letters,
    drill_broker,
    drill_env,
    drill_service,
    failure_traces,
    ping,
    start_worker,
    stop,
    wait_for_batch,
)
from .recipes import arm_key, holding_key

__all__ = [
    "cli_enqueue",
    "llm_rate_limited",
    "message_lost",
    "redis_full",
    "redis_full_mid_batch",
    "worker_stops_consuming",
    "redis_restarted",
    "worker_killed",
    "worker_group_terminated",
    "write_traces",
]

SKILLBOOK = "drillbook"
RESTART_DOWN_SECONDS = 2.0


def _outcome(outcome: Outcome, service: Service, handle: BatchHandle, status: BatchStatus) -> Outcome:
    book = check_book(service, SKILLBOOK)
    outcome.total, outcome.done, outcome.failed = status.total, status.done, status.failed
    outcome.dead_lettered = len(count_dead_letters(service, handle.batch_id))
    outcome.duplicate_skills = book.duplicate_skills
    outcome.steps_applied_twice = book.steps_applied_twice
    outcome.versions_contiguous = book.versions_contiguous
    outcome.notes.append(f"{book.skills} skills at version {book.version}")
    return outcome


def redis_restarted(
    directory: Path, *, during_batch: bool, samples: int = 24, broker: str = "redis"
) -> Outcome:
    """Restart Redis (clean shutdown, AOF on, down 2 s) with workers idle, or in the middle of a batch.

    With ``broker="rabbitmq"`` the tasks stay in RabbitMQ; the restarted Redis is the store and ledger.
    """
    with (
        PrivateRedis(directory / "redis", persistent=True) as server,
        drill_broker(broker, directory) as broker_url,
    ):
        env, settings = drill_env(
            server.url,
            directory,
            broker_url=broker_url,
            ACE_QUEUE_PREFIX="drill",
            ACE_SIM_LATENCY_SECONDS="0.1",
            # A task cancelled by the lost connection comes back after this, not after an hour.
            ACE_VISIBILITY_TIMEOUT_SECONDS="8",
            # A worker the restart left without its consumer (kombu #582) exits within seconds.
            ACE_WORKER_STALL_SECONDS="6",
        )
        with drill_service(settings, server.url) as service:
            fleet = Fleet(env, directory)
            try:
                fleet.start(service)
                started = time.monotonic()
                traces = failure_traces(samples)
                if during_batch:
                    handle = service.producer.enqueue_traces(traces, SKILLBOOK)
                    while handle.status().done < 3:
                        time.sleep(0.05)
                    server.restart(RESTART_DOWN_SECONDS)
                else:
                    server.restart(RESTART_DOWN_SECONDS)
                    fleet.wait_ready(service, ("learn", "write"), timeout=30)
                    handle = service.producer.enqueue_traces(traces, SKILLBOOK)
                status, failed_polls = wait_for_batch(handle, timeout=90, supervise=fleet)
                outcome = Outcome(
                    drill="redis restarted "
                    + ("mid-batch" if during_batch else "while idle")
                    + on_broker(broker),
                    load=f"{samples} traces, 4 learn threads + 1 writer, 0.1 s/LLM call",
                    faults=f"redis-server SIGTERM, down {RESTART_DOWN_SECONDS:g} s, restarted (AOF)",
                    seconds=time.monotonic() - started,
                )
                outcome.notes.append(f"workers alive: {all(fleet.alive().values())}")
                outcome.notes.append(f"producer polls refused while down: {failed_polls}")
                restarted = ", ".join(f"{name} (exit {code})" for name, code in fleet.restarts) or "none"
                outcome.notes.append(f"workers the supervisor restarted: {restarted}")
                return _outcome(outcome, service, handle, status)
            finally:
                fleet.stop_all()


@contextmanager
def quick_fleet(directory: Path, broker: str) -> Iterator[tuple[Service, redis.Redis, Fleet]]:
    """A private Redis without persistence, the broker, a service, a client and a fleet not yet started.

    The simulated LLM takes 0.05 s; a killed worker's unacknowledged task comes back after 4 s.
    """
    with (
        PrivateRedis(directory / "redis", persistent=False) as server,
        drill_broker(broker, directory) as broker_url,
    ):
        env, settings = drill_env(
            server.url,
            directory,
            broker_url=broker_url,
            ACE_QUEUE_PREFIX="drill",
            ACE_SIM_LATENCY_SECONDS="0.05",
            ACE_VISIBILITY_TIMEOUT_SECONDS="4",
        )
        client = redis.Redis.from_url(server.url)
        with drill_service(settings, server.url) as service:
            fleet = Fleet(env, directory)
            try:
                yield service, client, fleet
            finally:
                fleet.stop_all()
                client.close()


def worker_killed(directory: Path, *, step: str, samples: int = 12, broker: str = "redis") -> Outcome:
    """SIGKILL the worker running ``step`` ("ReflectStep" or "ApplyStep") while it holds, then replace it."""
    victim = "write" if step == "ApplyStep" else "learn"
    with quick_fleet(directory, broker) as (service, client, fleet):
        fleet.start(service)
        started = time.monotonic()
        client.set(arm_key(step), 1)
        handle = service.producer.enqueue_traces(failure_traces(samples), SKILLBOOK, recipe="held")
        wait_for(lambda: client.exists(holding_key(step)), 30, f"{step} to hold", detail=fleet.log_tail)
        fleet.kill(victim)
        at_kill = handle.status()
        fleet.start_one(victim)
        status, _ = wait_for_batch(handle, timeout=60)
        outcome = Outcome(
            drill=f"worker killed during {step.removesuffix('Step')}{on_broker(broker)}",
            load=f"{samples} traces, 4 learn threads + 1 writer",
            faults=f"SIGKILL of the {victim} worker mid-{step}, replacement started",
            seconds=time.monotonic() - started,
        )
        outcome.notes.append(f"done at the kill: {at_kill.done}/{at_kill.total}")
        return _outcome(outcome, service, handle, status)


def worker_group_terminated(directory: Path, *, samples: int = 12) -> Outcome:
    """SIGTERM a prefork learn worker's whole process group while a child holds in Reflect, then replace it.

    What systemd's KillMode=control-group (or a container's stop) does: every pool child gets
    the signal too, mid-step. Their steps are no failures: each message comes back.
    """
    with quick_fleet(directory, "redis") as (service, client, fleet):
        fleet.learn_pool = "prefork"
        fleet.start(service)
        started = time.monotonic()
        client.set(arm_key("ReflectStep"), 1)
        handle = service.producer.enqueue_traces(failure_traces(samples), SKILLBOOK, recipe="held")
        wait_for(
            lambda: client.exists(holding_key("ReflectStep")),
            30,
            "ReflectStep to hold",
            detail=fleet.log_tail,
        )
        stopped = fleet.processes["learn"]
        stop(stopped, sig=signal.SIGTERM)
        at_stop = handle.status()
        fleet.start_one("learn")
        status, _ = wait_for_batch(handle, timeout=60)
        outcome = Outcome(
            drill="worker's process group sent SIGTERM mid-step",
            load=f"{samples} traces, 4 prefork learn processes + 1 writer",
            faults="SIGTERM to the learn worker's process group while a child held in Reflect",
            seconds=time.monotonic() - started,
        )
        outcome.notes.append(f"done at the stop: {at_stop.done}/{at_stop.total}")
        outcome.notes.append(f"exit status of the stopped worker: {stopped.returncode}")
        return _outcome(outcome, service, handle, status)


def message_lost(directory: Path, *, samples: int = 12, lost: int = 2, broker: str = "redis") -> Outcome:
    """Delete ``lost`` step messages from the broker mid-batch, as a transport losing them in flight would."""
    with quick_fleet(directory, broker) as (service, client, fleet):
        started = time.monotonic()
        # Sent while no worker listens, so the messages wait in the broker's list to be lost.
        handle = service.producer.enqueue_traces(failure_traces(samples), SKILLBOOK)
        delete_messages(service, client, service.runtime.queue("learn"), lost)
        fleet.start(service)
        status, _ = wait_for_batch(handle, timeout=60)
        outcome = Outcome(
            drill="messages lost by the broker" + on_broker(broker),
            load=f"{samples} traces, 4 learn threads + 1 writer",
            faults=f"{lost} of {samples} first-step messages deleted from the queue",
            seconds=time.monotonic() - started,
        )
        redrives = service.runtime.batches.redrives(handle.batch_id)
        outcome.notes.append(f"samples sent again: {len(redrives)}, re-sends: {sum(redrives.values())}")
        return _outcome(outcome, service, handle, status)


def on_broker(broker: str) -> str:
    """The suffix naming a drill's broker in the table: none for the default (Redis)."""
    return "" if broker == "redis" else f" ({broker})"


def delete_messages(service: Service, client: redis.Redis, queue: str, count: int) -> None:
    """Take ``count`` messages off ``queue`` and drop them, on either broker: a transport's loss window."""
    if is_amqp(str(service.app.conf.broker_url)):
        with service.app.connection_for_write() as connection:
            channel = connection.default_channel
            for _ in range(count):
                if channel.basic_get(queue, no_ack=True) is None:
                    raise RuntimeError(f"queue {queue} had fewer than {count} messages to lose")
        return
    for _ in range(count):
        # The next message BRPOP would take.
        if not client.lrem(queue, 1, client.lindex(queue, -1) or b""):
            raise RuntimeError(f"queue {queue} had fewer than {count} messages to lose")


def worker_stops_consuming(directory: Path, *, stall_seconds: float = 3.0, samples: int = 4) -> Outcome:
    """Cancel a learn worker's consumer (it answers ping still): /healthz fails, it exits, a new one works."""
    with PrivateRedis(directory / "redis", persistent=False) as server:
        env, settings = drill_env(
            server.url, directory, ACE_QUEUE_PREFIX="drill", ACE_WORKER_STALL_SECONDS=f"{stall_seconds:g}"
        )
        with drill_service(settings, server.url) as service:
            port, log = free_port(), directory / "worker.log"
            extra = (f"--metrics-port={port}",)
            stuck = start_worker(env, log, queues="learn", name="learn", concurrency=2, extra=extra)
            fleet = Fleet(env, directory)
            try:
                wait_for_ping(service, "learn@drill", log)
                before = healthz(port)
                # What kombu #582 leaves: a worker that answers ping and takes nothing.
                service.app.control.cancel_consumer(
                    service.runtime.queue("learn"), destination=["learn@drill"], reply=True, timeout=5
                )
                started = time.monotonic()
                handle = service.producer.enqueue_traces(failure_traces(samples), SKILLBOOK)
                answered_ping = bool(ping(service, {"learn@drill"}, timeout=2))
                failing_at = None

                def exited_noting_healthz() -> bool:
                    nonlocal failing_at
                    if failing_at is None and healthz(port) == 503:
                        failing_at = time.monotonic() - started
                    return stuck.poll() is not None

                wait_for(
                    exited_noting_healthz, 10 * stall_seconds + 30, "the stalled worker to exit", every=0.1
                )
                exit_status = stuck.wait(timeout=30)
                exited_at = time.monotonic() - started
                fleet.start(service)  # the supervisor's replacement (and the writer)
                status, _ = wait_for_batch(handle, timeout=60)
                outcome = Outcome(
                    drill="worker stops consuming",
                    load=f"{samples} traces; ACE_WORKER_STALL_SECONDS={stall_seconds:g}",
                    faults="learn worker's consumer cancelled; still answering ping",
                    seconds=time.monotonic() - started,
                )
                outcome.notes.append(f"answered ping while stalled: {answered_ping}")
                outcome.notes.append(f"/healthz before: {before}")
                failing = "never" if failing_at is None else f"after {failing_at:.1f} s"
                outcome.notes.append(f"/healthz 503: {failing}")
                outcome.notes.append(f"exit status {exit_status} after {exited_at:.1f} s")
                return _outcome(outcome, service, handle, status)
            finally:
                if stuck.poll() is None:
                    stop(stuck, sig=signal.SIGKILL)
                fleet.stop_all()


def healthz(port: int) -> int:
    """The HTTP status of a worker's /healthz, 0 if nothing answers."""
    return healthz_answer(port)[0]


def healthz_answer(port: int) -> tuple[int, dict[str, object]]:
    """A worker's /healthz: HTTP status and JSON body; (0, {}) if nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read())
    except OSError:
        return 0, {}


def redis_full(directory: Path, *, samples: int = 6, full_for: float = 6.0) -> Outcome:
    """Start a worker while Redis is out of memory: it waits, says so on /healthz, then serves."""
    with PrivateRedis(directory / "redis", persistent=False, maxmemory="8mb") as server:
        env, settings = drill_env(server.url, directory, ACE_QUEUE_PREFIX="drill")
        client = redis.Redis.from_url(server.url)
        with drill_service(settings, server.url) as service:
            port, log = free_port(), directory / "worker.log"
            filled = fill_until_out_of_memory(client)
            started = time.monotonic()
            worker = start_worker(
                env, log, queues="execute,learn,write", name="all", extra=(f"--metrics-port={port}",)
            )
            try:
                time.sleep(full_for)
                alive_while_full = worker.poll() is None
                status_code, answer = healthz_answer(port)
                client.delete(*(f"fill:{i}" for i in range(filled)))
                wait_for_ping(service, "all@drill", log)
                handle = service.producer.enqueue_traces(failure_traces(samples), SKILLBOOK)
                status, _ = wait_for_batch(handle, timeout=60)
                outcome = Outcome(
                    drill="redis out of memory at start",
                    load=f"{samples} traces, one worker for every queue",
                    faults=f"maxmemory 8mb filled before the worker started, freed after {full_for:g} s",
                    seconds=time.monotonic() - started,
                )
                outcome.notes.append(f"alive while Redis was full: {alive_while_full}")
                outcome.notes.append(f"/healthz while full: {status_code} {answer.get('problem')}")
                return _outcome(outcome, service, handle, status)
            finally:
                stop(worker)
                client.close()


def redis_full_mid_batch(
    directory: Path, *, samples: int = 48, headroom: int = 2 * 1024 * 1024, full_for: float = 2.0
) -> Outcome:
    """Let Redis run out of memory mid-batch; free it ``full_for`` s after a worker met it.

    Nobody resumes the batch: it must finish from what the workers and the waiting producer do.
    48 samples run about 3 s: Redis fills at about a fifth of them, with room for a test process
    starved of CPU by a parallel suite (at 24, one CI run saw the batch finish before the fill).
    """
    with quick_fleet(directory, "redis") as (service, client, fleet):
        fleet.start(service)
        started = time.monotonic()
        handle = service.producer.enqueue_traces(failure_traces(samples), SKILLBOOK)
        wait_for(lambda: handle.status().done >= 2, 30, "the batch to get under way", detail=fleet.log_tail)
        # Just above what Redis holds now, filled: every write that needs memory is refused.
        client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + headroom)
        filled = 0
        try:
            filled = fill_until_out_of_memory(client)
            at_full = client.hget(batch_key(service.runtime.batches.prefix, handle.batch_id), "done")
            # Not handle.status(): Redis refuses even a MULTI of reads while it is full.

            def refused_while_kept_full() -> int:
                # Each acknowledgement frees a message's bytes: take them, or the workers would.
                nonlocal filled
                filled += fill_until_out_of_memory(client, start=filled, size=500)
                return fleet.log_count("OutOfMemoryError")

            wait_for(refused_while_kept_full, 30, "a worker to meet the full Redis", every=0.01)
            # Then full for ``full_for`` s more, so every worker meets it, not only the first: the
            # time is the fault, so this loop runs out its clock (a duration, not a wait).
            until = time.monotonic() + full_for
            while time.monotonic() < until:
                refused_while_kept_full()
                time.sleep(0.01)
        finally:
            client.config_set("maxmemory", 0)
            client.delete(*(f"fill:{i}" for i in range(filled)))
        status, _ = wait_for_batch(handle, timeout=90, supervise=fleet)
        outcome = Outcome(
            drill="redis out of memory mid-batch",
            load=f"{samples} traces, 4 learn threads + 1 writer",
            faults=f"maxmemory {headroom // 1024} KiB above use, filled; freed {full_for:g} s after refusals",
            seconds=time.monotonic() - started,
        )
        outcome.notes.append(f"done when Redis was full: {int(at_full or 0)}/{samples}")
        refusals = fleet.log_count("OutOfMemoryError")
        outcome.notes.append(f"worker log lines naming OutOfMemoryError: {refusals}")
        redrives = service.runtime.batches.redrives(handle.batch_id)
        outcome.notes.append(f"samples sent again: {len(redrives)}")
        outcome.notes.append(f"workers the supervisor restarted: {fleet.restarts}")
        return _outcome(outcome, service, handle, status)


def fill_until_out_of_memory(client: redis.Redis, *, start: int = 0, size: int = 10_000) -> int:
    """Write keys ``fill:<start>``, ``fill:<start + 1>``, ... of ``size`` bytes until Redis refuses one.

    Returns how many it wrote.
    """
    count = 0
    try:
        while True:
            client.set(f"fill:{start + count}", "x" * size)
            count += 1
    except redis.OutOfMemoryError:
        return count


def wait_for_ping(service: Service, node: str, log: Path, timeout: float = 60) -> None:
    wait_for(
        lambda: ping(service, {node}),
        timeout,
        f"{node} to answer ping",
        every=0.2,
        detail=lambda: f"log:\n{log.read_text()[-4000:]}",
    )


def llm_rate_limited(directory: Path, *, rate: float, samples: int = 12, max_retries: int = 12) -> Outcome:
    """Every simulated LLM call fails with a rate limit with probability ``rate``; then a healthy batch."""
    with PrivateRedis(directory / "redis", persistent=False) as server:
        env, settings = drill_env(
            server.url,
            directory,
            ACE_QUEUE_PREFIX="drill",
            ACE_SIM_FAILURE_RATE=str(rate),
            ACE_SIM_FAILURE="rate_limit",
            ACE_TASK_MAX_RETRIES=str(max_retries),
            # Doubling from 5 ms: even 12 failures in a row wait 41 s in all.
            ACE_RETRY_BACKOFF_SECONDS="0.005",
        )
        with drill_service(settings, server.url) as service:
            fleet = Fleet(env, directory)
            try:
                fleet.start(service)
                started = time.monotonic()
                handle = service.producer.enqueue_traces(failure_traces(samples), SKILLBOOK)
                status, _ = wait_for_batch(handle, timeout=60)
                seconds = time.monotonic() - started
                outcome = Outcome(
                    drill=f"LLM rate-limited {rate:.0%}",
                    load=f"{samples} traces, 4 learn threads + 1 writer, {max_retries} retries from 5 ms",
                    faults=f"{rate:.0%} of LLM calls raise LLMError (429)",
                    seconds=seconds,
                )
                outcome = _outcome(outcome, service, handle, status)
                outcome.notes.append(f"task retries: {fleet.log_count('LLMError on ')}")
                errors = handle.errors()
                outcome.notes.append(f"errors reported: {len(errors)}")
                if errors:
                    outcome.notes.append(f"first error: {errors[0]['step']}: {errors[0]['error']}")
                # Health: the same processes answer a ping and run a batch that needs no LLM.
                outcome.notes.append(
                    f"workers answering ping: {len(ping(service, {'learn@drill', 'write@drill'}))}/2"
                )
                later = service.producer.enqueue_traces(failure_traces(4), "echobook", recipe="echo")
                after, _ = wait_for_batch(later, timeout=30)
                outcome.notes.append(f"later batch: {after.done}/{after.total} done")
                outcome.notes.append(f"workers alive: {all(fleet.alive().values())}")
                return outcome
            finally:
                fleet.stop_all()


def write_traces(path: Path, count: int) -> Path:
    """A JSONL file of ``count`` traces (the synthetic ones, repeated)."""
    base = failure_traces(60, topics=3)
    with path.open("w") as out:
        for index in range(count):
            trace = dict(base[index % len(base)], id=str(index))
            out.write(json.dumps(trace) + "\n")
    return path


def run_cli_enqueue(env: dict[str, str], path: Path, skillbook: str) -> tuple[str, int, float]:
    """Run ``ace-workers enqueue`` as a process; its batch id, peak RSS in KiB (VmHWM), and seconds."""
    started = time.monotonic()
    out, err = path.with_suffix(".out"), path.with_suffix(".err")
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", CLI, "enqueue", str(path), "--skillbook", skillbook],
            env=env,
            cwd=REPO,
            stdout=stdout,
            stderr=stderr,
        )
        # wait4 reports the peak resident set (VmHWM) of exactly this child, whatever else we ran.
        _, code, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(code)
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"enqueue exited {process.returncode}: {err.read_text()[-4000:]}")
    return out.read_text().strip().splitlines()[-1], int(usage.ru_maxrss), seconds


def cli_enqueue(
    directory: Path, *, counts: tuple[int, ...] = (1_000, 10_000), learn_threads: int = 8
) -> list[Outcome]:
    """Enqueue each count of traces through the CLI, workers running, and follow each batch to the end."""
    outcomes = []
    with PrivateRedis(directory / "redis", persistent=False) as server:
        env, settings = drill_env(server.url, directory, ACE_QUEUE_PREFIX="drill")
        with drill_service(settings, server.url) as service:
            fleet = Fleet(env, directory, learn_threads=learn_threads)
            try:
                fleet.start(service)
                for count in counts:
                    path = write_traces(directory / f"traces-{count}.jsonl", count)
                    started = time.monotonic()
                    batch_id, peak_kib, enqueue_seconds = run_cli_enqueue(env, path, SKILLBOOK)
                    handle = BatchHandle(batch_id, service.runtime, service.dispatcher)
                    # About 11 samples/s on a 2-CPU machine: 10,000 traces need ~15 minutes.
                    status, _ = wait_for_batch(handle, timeout=max(600.0, count * 0.2))
                    outcome = Outcome(
                        drill=f"{count:,} traces through the CLI",
                        load=f"{count:,} traces, {learn_threads} learn threads + 1 writer, 0 s/LLM call",
                        faults="none (memory and accounting)",
                        seconds=time.monotonic() - started,
                    )
                    outcome = _outcome(outcome, service, handle, status)
                    outcome.notes.insert(0, f"producer peak RSS {peak_kib / 1024:.1f} MiB")
                    outcome.notes.insert(1, f"enqueue {enqueue_seconds:.1f} s")
                    outcome.notes.append(f"peak_kib={peak_kib}")
                    outcomes.append(outcome)
            finally:
                fleet.stop_all()
    return outcomes
