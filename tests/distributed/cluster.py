"""A real Redis Cluster of three masters for the tests, started from the redis-server binary.

Ports are chosen free; the nodes live in a temporary folder and are stopped (and the
folder removed) when the cluster closes. The store's tests run against it as they run
against the single server.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from redis.cluster import RedisCluster

__all__ = ["LocalCluster"]

MASTERS = 3


def _free_ports(count: int) -> list[int]:
    """``count`` ports free now, and their cluster-bus ports (port + 10000) free too."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def _cli(cli: str, port: int, *command: str) -> str:
    """What ``redis-cli -p PORT COMMAND`` prints (stripped)."""
    done = subprocess.run([cli, "-p", str(port), *command], capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


class LocalCluster:
    """Three cluster-enabled redis-servers, their slots assigned, until :meth:`close`."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        cli = shutil.which("redis-cli")
        if binary is None or cli is None:
            raise RuntimeError("redis-server and redis-cli are needed for the Redis Cluster tests")
        self.directory = Path(tempfile.mkdtemp(prefix="ace-cluster-"))
        self.ports = _free_ports(MASTERS)
        self.processes = []
        for port in self.ports:
            folder = self.directory / str(port)
            folder.mkdir()
            command = [
                binary,
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--save", "",
                "--appendonly", "no",
            ]  # fmt: skip
            with (folder / "redis.log").open("wb") as log:
                self.processes.append(
                    subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
                )
        try:
            self._wait_for_nodes(cli)
            created = subprocess.run(
                [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports), "--cluster-yes"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout}{created.stderr}")
            self._wait_until_ok(cli)
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        """The store URL of the cluster (any node; the client discovers the others)."""
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def client(self) -> RedisCluster:
        """A client of the cluster."""
        return RedisCluster(host="127.0.0.1", port=self.ports[0])

    def _wait_for_nodes(self, cli: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        for port in self.ports:
            while (
                subprocess.run([cli, "-p", str(port), "ping"], capture_output=True, text=True).stdout.strip()
                != "PONG"
            ):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"redis-server on port {port} did not start")
                time.sleep(0.05)

    def _wait_until_ok(self, cli: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        for port in self.ports:
            while (
                "cluster_state:ok"
                not in subprocess.run(
                    [cli, "-p", str(port), "cluster", "info"], capture_output=True, text=True
                ).stdout
            ):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the cluster did not reach state ok on port {port}")
                time.sleep(0.1)

    def close(self) -> None:
        """Stop every node and remove its files."""
        for process in self.processes:
            process.kill()
            process.wait(timeout=30)
        self.processes.clear()
        shutil.rmtree(self.directory, ignore_errors=True)
