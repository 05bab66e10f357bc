"""What the failure drills share: a private redis-server, worker processes, and the checks of an outcome.

Every drill runs against its own ``redis-server`` on a free port (a drill restarts it),
and its own RabbitMQ node where it uses one, with real ``ace-workers worker`` processes. The drills'
scenarios (scenarios.py) use these helpers; the tests assert on their outcomes and
``benchmarks/drills.py`` prints them as a table.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from ace_workers import sim
from ace_workers.distributed.producer.producer import BatchHandle
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.store.batches import BatchStatus
from ace_workers.distributed.store.keys import dead_letters_key
from tests.support.fixtures import TEST_RABBITMQ_URL_ENV, override
from tests.support.processes import CLI, REPO, stop
from tests.support.processes import start_worker as start_worker_process
from tests.support.servers import PrivateRabbitMQ, PrivateRedis
from tests.support.waiting import wait_for

__all__ = [
    "BROKERS",
    "CLI",
    "REPO",
    "BookCheck",
    "Fleet",
    "Outcome",
    "PrivateRedis",
    "check_book",
    "count_dead_letters",
    "drill_broker",
    "drill_env",
    "start_worker",
    "stop",
    "failure_traces",
    "wait_for_batch",
]


BROKERS = ("redis", "rabbitmq")


@contextmanager
def drill_broker(broker: str, directory: Path) -> Iterator[str | None]:
    """The broker URL of a drill: None for the drill's own Redis, or a private RabbitMQ node's.

    $ACE_TEST_RABBITMQ_URL, when set, names the broker instead.
    """
    if broker == "redis":
        yield None
    elif broker == "rabbitmq":
        url = override(TEST_RABBITMQ_URL_ENV)
        if url:
            yield url
            return
        with PrivateRabbitMQ(directory / "rabbitmq") as node:
            yield node.url
    else:
        raise ValueError(f"unknown broker {broker!r}: expected one of {', '.join(BROKERS)}")


DRILL_RECIPES = (
    "held=tests.support.drills.recipes:held_trace_analyser,echo=tests.support.drills.recipes:echo_recipe"
)


def drill_env(
    redis_url: str, home: Path, *, broker_url: str | None = None, **values: str
) -> tuple[dict[str, str], WorkerSettings]:
    """The environment of worker and CLI processes (only PATH, HOME and ``ACE_*``), and its settings.

    ``broker_url`` (a RabbitMQ vhost) carries the tasks; by default the drill's Redis does.
    """
    ace = {
        "ACE_REDIS_URL": redis_url,
        **({"ACE_BROKER_URL": broker_url} if broker_url else {}),
        "ACE_SIM_TRUST_THRESHOLD": "0",
        # Workers run the drills' recipes by name, like any configured recipe.
        "ACE_RECIPES": DRILL_RECIPES,
        # A waiting producer reconciles every second, and a lost sample is sent again a few
        # seconds after the visibility timeout rather than tens of seconds (doubling from 0.2 s).
        "ACE_RECONCILE_INTERVAL_SECONDS": "1",
        "ACE_RETRY_BACKOFF_SECONDS": "0.2",
        **values,
    }
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **ace}
    return env, WorkerSettings.from_env(ace)


def start_worker(
    env: dict[str, str],
    log: Path,
    *,
    queues: str,
    name: str,
    concurrency: int = 1,
    pool: str = "threads",
    extra: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """A real ``ace-workers worker`` process named ``name@drill``, in a session of its own."""
    return start_worker_process(
        env,
        log,
        queues=queues,
        concurrency=concurrency,
        pool=pool,
        loglevel="INFO",
        hostname=f"{name}@drill",
        extra=extra,
    )


@dataclass
class Fleet:
    """The worker processes of a drill: by default one execute+learn worker and the single writer."""

    env: dict[str, str]
    directory: Path
    learn_threads: int = 4
    learn_pool: str = "threads"
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    restarts: list[tuple[str, int]] = field(default_factory=list)  # (worker, exit status) restarted

    @property
    def log(self) -> Path:
        """Where every worker of the fleet logs."""
        return self.directory / "workers.log"

    def start(
        self, service: Service, names: tuple[str, ...] = ("learn", "write"), timeout: float = 60
    ) -> None:
        """Start the named workers ("learn", "write") and wait until each answers a ping."""
        for name in names:
            self.start_one(name)
        self.wait_ready(service, names, timeout)

    def start_one(self, name: str) -> subprocess.Popen[bytes]:
        """Start (or replace) worker ``name``: "learn" serves execute and learn, "write" the write queue."""
        if name == "write":
            process = start_worker(self.env, self.log, queues="write", name="write", concurrency=1)
        else:
            process = start_worker(
                self.env,
                self.log,
                queues="execute,learn",
                name=name,
                concurrency=self.learn_threads,
                pool=self.learn_pool,
            )
        self.processes[name] = process
        return process

    def wait_ready(self, service: Service, names: tuple[str, ...], timeout: float = 60) -> None:
        """Block until every named worker answers ``celery inspect ping``."""
        wanted = {f"{name}@drill" for name in names}

        def all_answer() -> bool:
            if ping(service, wanted) >= wanted:
                return True
            for name in names:
                if self.processes[name].poll() is not None:
                    raise RuntimeError(f"worker {name} exited; {self.log_tail()}")
            return False

        wait_for(
            all_answer, timeout, f"workers {sorted(wanted)} to be ready", every=0.2, detail=self.log_tail
        )

    def kill(self, name: str) -> None:
        """SIGKILL the worker ``name`` and its pool children."""
        stop(self.processes[name], sig=signal.SIGKILL)

    def restart_exited(self) -> list[str]:
        """Start again every worker that exited, as compose's restart policy or k8s would; their names."""
        exited = [name for name, process in self.processes.items() if process.poll() is not None]
        for name in exited:
            self.restarts.append((name, self.processes[name].returncode))
            self.start_one(name)
        return exited

    def alive(self) -> dict[str, bool]:
        """Whether each worker process is still running."""
        return {name: process.poll() is None for name, process in self.processes.items()}

    def stop_all(self) -> None:
        """Stop every worker together (SIGTERM, then SIGKILL after 30 s)."""
        stop(*self.processes.values())

    def log_tail(self) -> str:
        """The fleet log's last 4000 characters, for a failure message."""
        return f"log:\n{self.log.read_text(errors='replace')[-4000:]}"

    def log_count(self, text: str) -> int:
        """How many lines of the fleet's log contain ``text``."""
        if not self.log.exists():
            return 0
        return sum(text in line for line in self.log.read_text(errors="replace").splitlines())


def ping(service: Service, destinations: set[str], timeout: float = 1.0) -> set[str]:
    """The workers among ``destinations`` that answer ``celery inspect ping`` within ``timeout``."""
    try:
        replies = service.app.control.ping(destination=sorted(destinations), timeout=timeout) or []
    except (redis.ConnectionError, OSError):
        return set()
    return {name for reply in replies for name in reply}


@contextmanager
def drill_service(settings: WorkerSettings, redis_url: str) -> Iterator[Service]:
    """The producer side of a drill: an app, a runtime and a producer on the private Redis."""
    service = build_service(settings, redis_url=redis_url)
    try:
        yield service
    finally:
        service.close()


def failure_traces(n: int, *, topics: int = 3) -> list[dict[str, str]]:
    """The drills' traces: three topics by default, so a drill's skillbook ends with three rules."""
    return sim.failure_traces(n, seed=4, topics=topics)


def wait_for_batch(
    handle: BatchHandle, timeout: float, supervise: Fleet | None = None
) -> tuple[BatchStatus, int]:
    """Wait for the batch like BatchHandle.wait, riding out a Redis that is down; (status, failed polls).

    With ``supervise``, a worker that exits meanwhile is started again, as a supervisor would.
    """
    failed_polls = 0

    def finished() -> BatchStatus | None:
        nonlocal failed_polls
        if supervise is not None:
            supervise.restart_exited()
        try:
            # No check for workers: a drill kills them (or Redis) on purpose and waits for them back.
            return handle.wait(timeout=1.0, check_workers=False)
        except (redis.ConnectionError, redis.BusyLoadingError):
            failed_polls += 1
            return None
        except TimeoutError:
            return None

    status = wait_for(finished, timeout, f"batch {handle.batch_id} to finish", every=0.2)
    return status, failed_polls


@dataclass
class BookCheck:
    """What a skillbook looks like after a drill: duplicates and change-log integrity."""

    skills: int
    duplicate_skills: int
    version: int
    versions_contiguous: bool
    steps_applied_twice: int


def check_book(service: Service, skillbook: str) -> BookCheck:
    """Count duplicate skills, check the change log's versions run to now with no gap and no write twice."""
    store = service.runtime.store(skillbook)
    if not store.exists():  # nothing was ever applied (every sample failed)
        return BookCheck(
            skills=0, duplicate_skills=0, version=0, versions_contiguous=True, steps_applied_twice=0
        )
    book = store.export()
    contents = Counter(skill.content for skill in book.skills())
    version = store.version()
    history = store.history(limit=max(1, version + 10))
    # The log keeps about ACE_CHANGELOG_MAXLEN entries: what is left must run without a gap to now.
    versions = sorted(change.version for change in history)
    first = versions[0] if versions else 1
    # A redelivered step makes the same writes under the same idempotency keys: a key twice in the
    # log is a write applied twice.
    writes = Counter(change.idempotency_key for change in history if change.idempotency_key)
    return BookCheck(
        skills=len(book),
        duplicate_skills=sum(count - 1 for count in contents.values()),
        version=version,
        versions_contiguous=versions == list(range(first, version + 1)),
        steps_applied_twice=sum(count - 1 for count in writes.values() if count > 1),
    )


def count_dead_letters(service: Service, batch_id: str | None = None) -> list[dict[str, Any]]:
    """The parked messages (of ``batch_id`` only, when given)."""
    key = dead_letters_key(service.runtime.settings.queue_prefix)
    letters = [json.loads(raw) for raw in service.runtime.redis.lrange(key, 0, -1)]
    return [letter for letter in letters if batch_id is None or letter["kwargs"]["batch_id"] == batch_id]


@dataclass
class Outcome:
    """One drill's result, as the benchmark table shows it."""

    drill: str
    load: str
    faults: str
    total: int = 0
    done: int = 0
    failed: int = 0
    dead_lettered: int = 0
    duplicate_skills: int = 0
    steps_applied_twice: int = 0
    versions_contiguous: bool = True
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def accounted(self) -> bool:
        """Every sample finished one way or the other, and every failure is parked as a dead letter."""
        return self.done + self.failed == self.total and self.failed == self.dead_lettered
