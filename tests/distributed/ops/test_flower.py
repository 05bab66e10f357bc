"""``ace-workers flower`` and ``celery -A ace_workers.distributed.ops.inspect_app`` against the real Redis.

Flower runs as a subprocess, the way an operator starts it; the workers run in this
process with heartbeats on and per-role node names, as ``ace-workers worker`` names them.
Headless Chromium (Debian's ``chromium``) opens the tasks page; a missing browser fails
the test rather than skipping it (``.ci/run`` installs it).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from celery.contrib.testing.worker import start_worker

from ace_workers.distributed.errors import InvalidSettingError, UnknownSettingError
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.celery_worker import reset_event_loop
from ace_workers.sim import failure_traces
from tests.support.browser import HEADLESS_FLAGS, chromium
from tests.support.cli import run_console_script
from tests.support.processes import terminate
from tests.support.servers import free_port
from tests.support.waiting import wait_for

BIN = Path(sys.executable).parent
USER, PASSWORD = "ops", "s3cret-flower"
NODES = ("execute-learn@flowertest", "write@flowertest")


def http_get(url: str, *, auth: tuple[str, str] | None = (USER, PASSWORD)) -> tuple[int, bytes]:
    """Status and body of a GET (4xx/5xx included), with basic auth unless ``auth`` is None."""
    request = urllib.request.Request(url)
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@dataclass
class Flower:
    """A running ``ace-workers flower`` subprocess."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def api(self, path: str) -> Any:
        status, body = http_get(f"{self.url}{path}")
        assert status == 200, f"{path}: HTTP {status}: {body[:300]!r}"
        return json.loads(body)


@pytest.fixture
def fleet(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """Workers for the three queues, named like ``ace-workers worker`` names them, sending heartbeats."""
    prefix = f"f{uuid.uuid4().hex[:8]}"
    settings = WorkerSettings(redis_url=redis_url, queue_prefix=prefix, sim_trust_threshold=0)
    service = build_service(settings, redis_url=redis_url)
    queues = settings.queue_names()
    layout = ((NODES[0], [queues["execute"], queues["learn"]], 4), (NODES[1], [queues["write"]], 1))
    with ExitStack() as stack:
        for hostname, names, concurrency in layout:
            reset_event_loop()  # each worker gets a kombu hub of its own
            stack.enter_context(
                start_worker(
                    service.app,
                    pool="threads",
                    concurrency=concurrency,
                    queues=names,
                    hostname=hostname,
                    without_heartbeat=False,
                    perform_ping_check=False,
                    loglevel="WARNING",
                    shutdown_timeout=30.0,
                )
            )
        yield service
    service.close()


def flower_env(redis_url: str, prefix: str, **extra: str) -> dict[str, str]:
    """This process's environment without its ACE_*/FLOWER_* variables, plus the fleet's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACE_", "FLOWER_"))}
    return {**env, "ACE_REDIS_URL": redis_url, "ACE_QUEUE_PREFIX": prefix, **extra}


@pytest.fixture
def flower(fleet: Service, redis_url: str, tmp_path: Path) -> Iterator[Flower]:
    """``ace-workers flower`` on a free port, basic auth from ACE_FLOWER_BASIC_AUTH, up and answering."""
    port = free_port()
    log = tmp_path / "flower.log"
    env = flower_env(
        redis_url, fleet.runtime.settings.queue_prefix, ACE_FLOWER_BASIC_AUTH=f"{USER}:{PASSWORD}"
    )
    with log.open("wb") as out:
        process = subprocess.Popen(
            # No --address: the default must be loopback (test_flower_listens_on_loopback_by_default).
            [str(BIN / "ace-workers"), "flower", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    running = Flower(f"http://127.0.0.1:{port}", process, log)
    try:

        def healthy() -> bool:
            if process.poll() is not None:
                pytest.fail(f"flower exited with {process.returncode}:\n{running.output()}", pytrace=False)
            try:
                return http_get(f"{running.url}/healthcheck", auth=None)[0] == 200
            except OSError:
                return False

        wait_for(healthy, 30, "Flower to answer /healthcheck", every=0.25)
        yield running
    finally:
        terminate(process, timeout=15)


def step_task_names(service: Service) -> set[str]:
    """The names the step tasks of the trace_analyser recipe carry in Flower: ``ace.<Step>``."""
    _, routes = service.runtime.pipeline("trace_analyser", "support")
    return {f"ace.{route.name}" for route in routes}


def run_batch_seen_by_flower(fleet: Service, flower: Flower) -> dict[str, Any]:
    """Run a small batch once Flower sees both workers; return Flower's tasks when all succeeded."""

    def both_workers() -> bool:
        workers = flower.api("/api/workers?refresh=1")
        return set(NODES) <= set(workers)

    # The worker answering inspect also means Flower's event receiver has been up for a while.
    wait_for(both_workers, 30, f"Flower to list the workers {NODES}", every=0.25)
    handle = fleet.producer.enqueue_traces(failure_traces(5), "support")
    status = handle.wait(timeout=60)
    assert (status.done, status.failed) == (5, 0)
    expected = step_task_names(fleet)

    def all_succeeded() -> dict[str, Any] | None:
        tasks: dict[str, Any] = flower.api("/api/tasks")
        ours = [t for t in tasks.values() if t["name"] in expected]
        done = {t["name"] for t in ours if t["state"] == "SUCCESS"}
        return tasks if done == expected and len(ours) == 5 * len(expected) else None

    tasks: dict[str, Any] = wait_for(
        all_succeeded, 30, f"Flower to show {sorted(expected)} succeeded", every=0.25
    )
    return tasks


def test_the_flower_credentials_setting_is_checked_and_kept_out_of_the_repr() -> None:
    settings = WorkerSettings.from_env({"ACE_FLOWER_BASIC_AUTH": "ops:pw-one,viewer:pw-two"})
    assert settings.flower_basic_auth == "ops:pw-one,viewer:pw-two"
    assert "pw-one" not in repr(settings)
    for bad in ("ops", ":pw-one", "ops:", "ops:pw-one,", " :pw-one"):
        with pytest.raises(InvalidSettingError, match="ACE_FLOWER_BASIC_AUTH") as caught:
            WorkerSettings.from_env({"ACE_FLOWER_BASIC_AUTH": bad})
        assert "pw-one" not in str(caught.value)


def test_importing_the_command_line_app_module_reads_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACE_NOT_A_SETTING", "1")  # from_env would raise on it
    module = importlib.import_module("ace_workers.distributed.ops.inspect_app")
    with pytest.raises(UnknownSettingError, match="ACE_NOT_A_SETTING"):
        module.app  # noqa: B018 - the lookup is what builds the app


@pytest.mark.slow
def test_celery_inspect_ping_on_the_command_line_app_reaches_a_worker(fleet: Service, redis_url: str) -> None:
    env = flower_env(redis_url, fleet.runtime.settings.queue_prefix)
    celery = [str(BIN / "celery"), "-A", "ace_workers.distributed.ops.inspect_app"]
    ping = subprocess.run(
        [*celery, "inspect", "ping", "-d", NODES[1], "--timeout", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert f"{NODES[1]}: OK" in ping.stdout
    assert "pong" in ping.stdout
    absent = subprocess.run(
        [*celery, "inspect", "ping", "-d", "nobody@nowhere", "--timeout", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert absent.returncode != 0  # what makes it a health check
    # A worker on this app has no step task: it refuses to start rather than discard step messages.
    worker = subprocess.run(
        [*celery, "worker", "--queues", fleet.runtime.queue("learn"), "--pool", "solo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert worker.returncode != 0
    assert "ace-workers worker" in worker.stdout + worker.stderr


@pytest.mark.slow
def test_flower_refuses_to_start_without_auth_unless_told_explicitly(
    redis_url: str, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Through main(), as the console script runs it, in this process: the refusal comes before
    # Flower is imported, so a process of its own would only add a second of imports.
    clean_env.setenv("ACE_REDIS_URL", redis_url)
    clean_env.setenv("ACE_QUEUE_PREFIX", "noauth")
    refused = run_console_script(clean_env, capsys, "flower", "--port", str(free_port()))
    assert refused.code == 2
    assert "Flower needs basic auth" in refused.err
    assert "ACE_FLOWER_BASIC_AUTH" in refused.err
    contradictory = run_console_script(clean_env, capsys, "flower", "--no-auth", "--basic-auth", "a:b")
    assert contradictory.code == 2
    assert "contradict" in contradictory.err


@pytest.mark.slow
def test_flower_lists_the_workers_and_the_step_tasks_and_exports_metrics(
    fleet: Service, flower: Flower
) -> None:
    tasks = run_batch_seen_by_flower(fleet, flower)
    workers = flower.api("/api/workers")
    assert set(NODES) <= set(workers)
    served = {q["name"] for node in NODES for q in workers[node]["active_queues"]}
    assert served == set(fleet.runtime.settings.queue_names().values())
    expected = step_task_names(fleet)
    assert expected == {"ace.ReflectStep", "ace.TagStep", "ace.UpdateStep", "ace.ApplyStep"}
    assert {t["name"] for t in tasks.values()} == expected
    # Writers ran on the write worker, the rest on the execute/learn one.
    by_step = {t["name"]: t["worker"] for t in tasks.values() if t["name"] in expected}
    assert by_step == {
        "ace.ReflectStep": NODES[0],
        "ace.UpdateStep": NODES[0],
        "ace.TagStep": NODES[1],
        "ace.ApplyStep": NODES[1],
    }

    status, body = http_get(f"{flower.url}/metrics")
    assert status == 200
    metrics = body.decode()
    for name in expected:
        assert f'flower_events_total{{task="{name}",type="task-succeeded",worker="' in metrics
        assert f'flower_task_runtime_seconds_count{{task="{name}",worker="' in metrics

    def online(node: str) -> bool:
        # Set by the worker's heartbeat events, every 2 s.
        return f'flower_worker_online{{worker="{node}"}} 1.0' in http_get(f"{flower.url}/metrics")[1].decode()

    for node in NODES:
        wait_for(lambda node=node: online(node), 15, f"flower_worker_online of {node}", every=0.25)


def listening_addresses(port: int) -> set[str]:
    """The IPv4 addresses (dotted) on which some socket of this machine listens on ``port``."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, _, hex_port = local.partition(":")
        if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


@pytest.mark.slow
def test_flower_listens_on_loopback_by_default(flower: Flower) -> None:
    port = int(flower.url.rsplit(":", 1)[1])
    assert listening_addresses(port) == {"127.0.0.1"}


@pytest.mark.slow
def test_flower_refuses_unauthenticated_and_wrong_credentials(flower: Flower) -> None:
    for path in ("/api/workers", "/api/tasks", "/tasks", "/"):
        status, _ = http_get(f"{flower.url}{path}", auth=None)
        assert status == 401, path
        status, _ = http_get(f"{flower.url}{path}", auth=(USER, "wrong"))
        assert status == 401, path
    # Prometheus scrapes and liveness probes carry no credentials; Flower serves these two open.
    assert http_get(f"{flower.url}/metrics", auth=None)[0] == 200
    assert http_get(f"{flower.url}/healthcheck", auth=None)[0] == 200


def run_chromium(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    """Headless Chromium on ``url`` with a private profile; the page's scripts get a few seconds to run."""
    command = [
        chromium(),
        *HEADLESS_FLAGS,
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        *extra,
        url,
    ]
    return subprocess.run(command, capture_output=True, timeout=90, check=False)


@pytest.mark.slow
@pytest.mark.browser
def test_flowers_tasks_page_in_headless_chromium_shows_the_step_tasks(
    fleet: Service, flower: Flower, tmp_path: Path
) -> None:
    run_batch_seen_by_flower(fleet, flower)
    # Credentials in the URL: Chromium answers the page's basic-auth challenge with them and
    # reuses them for the page's own requests (the task table loads by XHR).
    page = flower.url.replace("http://", f"http://{USER}:{PASSWORD}@") + "/tasks"

    names = step_task_names(fleet)
    seen = {"html": ""}

    def lists_every_step() -> bool:
        # The table loads by XHR within Chromium's virtual time; on a loaded machine it may not.
        dom = run_chromium(page, tmp_path / "profile-dom", "--dump-dom")
        assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
        seen["html"] = dom.stdout.decode(errors="replace")
        return all(name in seen["html"] for name in names)

    wait_for(
        lists_every_step,
        180,
        "Flower's tasks page to list every step task",
        every=1,
        detail=lambda: [name for name in names if name not in seen["html"]],
    )

    screenshot = tmp_path / "flower-tasks.png"
    shot = run_chromium(
        page, tmp_path / "profile-shot", f"--screenshot={screenshot}", "--window-size=1400,900"
    )
    assert shot.returncode == 0, shot.stderr.decode(errors="replace")[-2000:]
    png = screenshot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1400, 900)
    # A blank or error page compresses to a few kilobytes; a table of tasks does not.
    assert len(png) > 30_000, len(png)
