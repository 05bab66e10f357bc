"""Redis commands and round trips per sample by worker kind, and worker CPU per sample, against bare Celery.

The fleet as ``learning_throughput.py`` runs it: one ``ace-workers worker`` process on the
execute and learn queues with ``--slots`` threads and one on the write queue with one thread,
learning TraceAnalyser's recipe (Reflect and Update on learn, Tag and Apply on write) with the
simulated LLM; and the bare Celery chain of the same hops and sleeps (``bare_chain_app.py``)
on the same worker layout. Both run on a private ``redis-server`` over TCP loopback, so that
every command seen is theirs and its client's port names the process that sent it.

Counting: a warm-up batch first, then Redis ``MONITOR`` around one batch of ``--samples``
samples. Each command is put to the process that sent it (its client port, from /proc: the
learn worker, the write worker, or this process: producer and polling), split into what a
client sent and what the server's scripts ran, and divided by the samples. Round trips: the
commands a client sent, a MULTI ... EXEC counting as one (redis-py and kombu send a transaction
in one write), and so does a pipeline without MULTI (a step's script with the metered spend riding
along): commands of one client less than PIPELINE_GAP apart are one write (a client's next
round trip waits for the reply, far longer).

Timing (no MONITOR: it slows Redis down): ``--rounds`` rounds of one batch each, ours and bare
alternating which goes first, each on fresh worker processes with one warm-up batch; worker
CPU per sample is read from /proc (utime + stime of both worker processes) around the timed
batch. Printed: samples/s and CPU ms/sample of each, and min/median/max of ours/bare.

    python benchmarks/round_trips.py [--samples 48] [--slots 16] [--latency 0.2] [--rounds 3]
        [--skip-timing] [--skip-count]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from learning_throughput import BARE_SHAPE, POLL_KEYS, POLL_SECONDS, workers_for
from rounds import Spread, round_order

from ace_workers.core.context import ACEStepContext
from ace_workers.distributed.service import Service, build_service
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.payload import context_to_payload
from ace_workers.sim import failure_traces

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_MONITOR_LINE = re.compile(r'^(?P<time>\d+\.\d+) \[\d+ (?P<client>[^\]]+)\] "(?P<command>[^"]+)"')
KINDS = ("learn", "write", "producer")
# Commands of one pipelined write reach MONITOR microseconds apart; a Python client's next round
# trip (reply read, parsed, next command built and sent) takes a hundred or more.
PIPELINE_GAP = 0.00003


@dataclass
class Counted:
    """What MONITOR saw around one batch: commands by (kind, command), scripts' commands, round trips."""

    samples: int
    sent: Counter[tuple[str, str]] = field(default_factory=Counter)
    scripted: Counter[str] = field(default_factory=Counter)
    round_trips: Counter[str] = field(default_factory=Counter)


@contextmanager
def private_redis() -> Iterator[str]:
    """A redis-server of our own on a free loopback port (persistence off); yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("no redis-server on PATH")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tempfile.mkdtemp(prefix="round-trips-")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            folder,
        ],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise SystemExit("the private redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def local_ports(pid: int) -> set[int]:
    """The local TCP ports of ``pid``'s open sockets (Linux /proc)."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            columns = line.split()
            if columns[9] in inodes:
                ports.add(int(columns[1].rsplit(":", 1)[1], 16))
    return ports


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (every thread), from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Monitor:
    """Redis MONITOR in a thread, keeping (time, client, command) of every command while it runs."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.lines: list[tuple[float, str, str]] = []
        self.raw: list[str] = []  # the lines as MONITOR sent them, for --dump
        self._connection: Any = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._stop = threading.Event()

    def __enter__(self) -> Monitor:
        self._connection = self.client.connection_pool.get_connection()
        self._connection.send_command("MONITOR")
        if self._connection.read_response() not in (b"OK", "OK"):
            raise SystemExit("MONITOR refused")
        self._thread.start()
        return self

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                raw = self._connection.read_response()
            except (redis.ConnectionError, OSError, ValueError):
                return
            text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
            match = _MONITOR_LINE.match(text)
            if match:
                self.raw.append(text[:200])
                self.lines.append((float(match["time"]), match["client"], match["command"].upper()))

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.2)  # the last commands' lines reach us
        self._stop.set()
        self._connection.disconnect()
        self._thread.join(timeout=5)
        self.client.close()


def count(lines: list[tuple[float, str, str]], kinds: Callable[[str], str], samples: int) -> Counted:
    """Commands by kind and command, scripts' commands, and estimated round trips, of one batch."""
    counted = Counted(samples)
    in_transaction: set[str] = set()  # clients between their MULTI and EXEC
    last: dict[str, float] = {}  # when each client's previous command was seen
    for at, client, command in lines:
        if client == "lua":
            counted.scripted[command] += 1
            continue
        if command == "MONITOR":
            continue
        kind = kinds(client)
        counted.sent[kind, command] += 1
        pipelined = at - last.get(client, float("-inf")) < PIPELINE_GAP
        last[client] = at
        if command == "MULTI":
            in_transaction.add(client)
        elif command in ("EXEC", "DISCARD"):
            in_transaction.discard(client)
        if (client not in in_transaction or command == "MULTI") and not pipelined:
            counted.round_trips[kind] += 1 if command not in ("EXEC", "DISCARD") else 0
    return counted


def kinds_of(processes: dict[str, subprocess.Popen[bytes]]) -> Callable[[str], str]:
    """A function naming the worker kind ("learn", "write", "producer") of a MONITOR client address."""
    by_port: dict[int, str] = {}
    for role, process in processes.items():
        for port in local_ports(process.pid):
            by_port[port] = role
    for port in local_ports(os.getpid()):
        by_port[port] = "producer"

    def kind(client: str) -> str:
        port = int(client.rsplit(":", 1)[1]) if ":" in client else -1
        return by_port.get(port, "other")

    return kind


def run_ours(service: Service, traces: list[dict[str, str]], name: str, timeout: float) -> float:
    """Seconds to learn ``traces`` as one batch into the new skillbook ``name``."""
    start = time.perf_counter()
    status = service.producer.enqueue_traces(traces, name).wait(timeout=timeout)
    elapsed = time.perf_counter() - start
    if (status.done, status.failed) != (len(traces), 0):
        raise SystemExit(f"benchmark run is wrong: {status.done} done, {status.failed} failed")
    return elapsed


def run_bare(service: Service, traces: list[dict[str, str]], timeout: float) -> float:
    """Seconds to run one bare chain of TraceAnalyser's shape per trace."""
    from celery import chain

    queues = service.runtime.settings.queue_names()
    payloads = [context_to_payload(ACEStepContext(trace=t), claims=service.runtime.claims) for t in traces]
    backend = service.app.backend
    start = time.perf_counter()
    pending = []
    for payload in payloads:
        signatures = [
            service.app.signature(task, args=(payload,) if position == 0 else (), queue=queues[role])
            for position, (task, role) in enumerate(BARE_SHAPE)
        ]
        pending.append(backend.get_key_for_task(chain(*signatures).apply_async().id))
    deadline = time.monotonic() + timeout
    while pending:
        head, rest = pending[:POLL_KEYS], pending[POLL_KEYS:]
        values = backend.client.mget(head)
        pending = [k for k, v in zip(head, values, strict=True) if v is None or _running(v)] + rest
        if time.monotonic() > deadline:
            raise SystemExit(f"bare chains: {len(pending)} unfinished after {timeout} s")
        time.sleep(POLL_SECONDS)
    return time.perf_counter() - start


def _running(raw: bytes) -> bool:
    status = json.loads(raw)["status"]
    if status in ("FAILURE", "REVOKED"):
        raise SystemExit("benchmark run is wrong: a bare chain failed")
    return bool(status != "SUCCESS")


@dataclass(frozen=True)
class Timed:
    """One timed batch: samples/s and worker CPU ms per sample (learn, write)."""

    rate: float
    learn_ms: float
    write_ms: float

    @property
    def cpu_ms(self) -> float:
        """Both workers' CPU ms per sample."""
        return self.learn_ms + self.write_ms


class Bench:
    """The service, the arguments, and a counter for fresh skillbook names."""

    def __init__(self, service: Service, args: argparse.Namespace) -> None:
        self.service = service
        self.args = args
        self.batches = 0
        # The worker processes read their settings from the environment: this one's admission window.
        os.environ["ACE_ADMISSION_WINDOW"] = str(service.runtime.settings.admission_window)

    def batch(self, bare: bool, samples: int) -> float:
        """Seconds of one batch of ``samples`` (ours into a fresh skillbook, or bare chains)."""
        traces = failure_traces(samples)
        if bare:
            return run_bare(self.service, traces, self.args.timeout)
        self.batches += 1
        return run_ours(self.service, traces, f"rt-{self.batches}", self.args.timeout)

    def timed(self, bare: bool) -> Timed:
        """One timed batch on fresh workers, after a warm-up batch, with the workers' CPU from /proc."""
        args = self.args
        os.environ["ACE_ADMISSION_WINDOW"] = str(self.service.runtime.settings.admission_window)
        with workers_for(self.service, "processes", args.slots, bare=bare) as processes:
            self.batch(bare, args.slots)
            before = {role: cpu_seconds(p.pid) for role, p in processes.items()}
            elapsed = self.batch(bare, args.samples)
            after = {role: cpu_seconds(p.pid) for role, p in processes.items()}
        per = {role: (after[role] - before[role]) * 1000 / args.samples for role in before}
        return Timed(args.samples / elapsed, per["learn"], per["write"])

    def counted(self, bare: bool) -> Counted:
        """MONITOR around one batch on fresh workers, after a warm-up batch."""
        args = self.args
        with workers_for(self.service, "processes", args.slots, bare=bare) as processes:
            self.batch(bare, args.slots)
            with Monitor(self.service.runtime.settings.redis_url or "") as monitor:
                self.batch(bare, args.samples)
            kinds = kinds_of(processes)
            if args.dump is not None:
                with open(f"{args.dump}.{'bare' if bare else 'ours'}", "w", encoding="utf-8") as out:
                    out.writelines(
                        f"{kinds(client)} {raw}\n"
                        for (_, client, _), raw in zip(monitor.lines, monitor.raw, strict=True)
                    )
            return count(monitor.lines, kinds, args.samples)


def print_counted(ours: Counted, bare: Counted, top: int) -> None:
    """Commands per sample by kind and command (ours, bare), scripts' commands, and round trips."""
    print(f"per sample, {ours.samples} samples a batch (ours | bare chain):")
    for kind in (*KINDS, "other"):
        our_total = sum(n for (k, _), n in ours.sent.items() if k == kind) / ours.samples
        bare_total = sum(n for (k, _), n in bare.sent.items() if k == kind) / bare.samples
        if not our_total and not bare_total:
            continue
        print(
            f"  {kind:>8}: {our_total:6.1f} | {bare_total:6.1f} commands sent, "
            f"{ours.round_trips[kind] / ours.samples:6.1f} | {bare.round_trips[kind] / bare.samples:6.1f} "
            "round trips"
        )
        by_command: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for (k, command), n in ours.sent.items():
            if k == kind:
                by_command[command][0] = n / ours.samples
        for (k, command), n in bare.sent.items():
            if k == kind:
                by_command[command][1] = n / bare.samples
        ranked = sorted(by_command.items(), key=lambda item: -item[1][0])
        for command, (mine, theirs) in ranked[:top]:
            print(f"      {command:<16} {mine:6.2f} | {theirs:6.2f}")
    total = sum(ours.round_trips.values()) / ours.samples
    bare_total = sum(bare.round_trips.values()) / bare.samples
    scripted = sum(ours.scripted.values()) / ours.samples
    print(f"  all kinds: {total:.1f} | {bare_total:.1f} round trips per sample")
    print(f"  run inside scripts (ours): {scripted:.1f} commands per sample")


def main() -> None:
    """Count round trips per sample, then time alternating rounds of ours and bare."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=48, help="samples in the counted and timed batch")
    parser.add_argument("--slots", type=int, default=16, help="learn worker threads")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM call")
    parser.add_argument(
        "--rounds", type=int, default=3, help="timed rounds, alternating which side goes first"
    )
    parser.add_argument("--top", type=int, default=12, help="commands shown per kind")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "--dump", help="write every counted command to DUMP.ours and DUMP.bare (time, kind, name)"
    )
    parser.add_argument("--skip-count", action="store_true", help="time only")
    parser.add_argument("--skip-timing", action="store_true", help="count only")
    parser.add_argument(
        "--admission",
        action="store_true",
        help="instead: time ours with admission on (the default window) against off (0), one tenant",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.admission:
        time_admission(args)
        return
    with private_redis() as url:
        settings = WorkerSettings(redis_url=url, queue_prefix="benchrt", sim_latency_seconds=args.latency)
        service = build_service(settings, redis_url=url)
        bench = Bench(service, args)
        try:
            print(
                f"{args.slots} learn slots, 1 write slot, {args.latency * 1000:.0f} ms per simulated call, "
                f"private redis-server {url}"
            )
            if not args.skip_count:
                print_counted(bench.counted(bare=False), bench.counted(bare=True), args.top)
            if not args.skip_timing:
                time_rounds(bench, args.rounds)
        finally:
            service.close()


def time_rounds(bench: Bench, rounds: int) -> None:
    """``rounds`` rounds of ours and bare, alternating which goes first; each round and the ratios."""
    rates, cpus = [], []
    for number in range(rounds):
        order = round_order((False, True), number)
        results = {bare: bench.timed(bare) for bare in order}
        ours, bare = results[False], results[True]
        rates.append(ours.rate / bare.rate)
        cpus.append(ours.cpu_ms / bare.cpu_ms)
        print(
            f"round {number + 1} ({'ours first' if number % 2 == 0 else 'bare first'}): "
            f"ours {ours.rate:.2f} samples/s, CPU {ours.cpu_ms:.1f} ms/sample "
            f"(learn {ours.learn_ms:.1f}, write {ours.write_ms:.1f}); "
            f"bare {bare.rate:.2f} samples/s, CPU {bare.cpu_ms:.1f} ms/sample "
            f"(learn {bare.learn_ms:.1f}, write {bare.write_ms:.1f})"
        )
    print(f"throughput ours/bare min/median/max: {Spread.of(rates).figures()} (target >= 0.95)")
    print(f"worker CPU per sample ours/bare min/median/max: {Spread.of(cpus).figures()} (target <= 1.2)")


def time_admission(args: argparse.Namespace) -> None:
    """``--rounds`` rounds of ours with admission on and off (one tenant), alternating which goes first."""
    rates, cpus = [], []
    with private_redis() as url:
        benches = {}
        for window in (WorkerSettings().admission_window, 0):
            settings = WorkerSettings(
                redis_url=url,
                queue_prefix="benchrt",
                sim_latency_seconds=args.latency,
                admission_window=window,
            )
            benches[window] = Bench(build_service(settings, redis_url=url), args)
        on, off = benches
        try:
            for number in range(args.rounds):
                order = round_order((on, off), number)
                results = {window: benches[window].timed(bare=False) for window in order}
                rates.append(results[on].rate / results[off].rate)
                cpus.append(results[on].cpu_ms / results[off].cpu_ms)
                print(
                    f"round {number + 1}: admission on (window {on}) {results[on].rate:.2f} samples/s, "
                    f"CPU {results[on].cpu_ms:.1f} ms/sample; off {results[off].rate:.2f} samples/s, "
                    f"CPU {results[off].cpu_ms:.1f} ms/sample"
                )
        finally:
            for bench in benches.values():
                bench.service.close()
    print(f"throughput on/off min/median/max: {Spread.of(rates).figures()} (target >= 0.97)")
    print(f"worker CPU per sample on/off min/median/max: {Spread.of(cpus).figures()}")


if __name__ == "__main__":
    main()
