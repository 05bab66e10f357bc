"""Database 14 of a shared Redis, claimed for one benchmark run at a time (or an embedded Redis).

Shared by the distributed benchmarks; the tests run on private servers of their own and never touch it.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from ace_workers.distributed.connections import client_url_for
from ace_workers.distributed.ops.embedded_redis import EmbeddedRedis

__all__ = [
    "BENCH_DB",
    "DEFAULT_REDIS_URL",
    "add_redis_options",
    "bench_redis",
    "chosen_redis",
    "claim_bench_db",
]

BENCH_DB = 14  # the only database of a shared Redis the benchmarks may flush
DEFAULT_REDIS_URL = f"redis://127.0.0.1:6379/{BENCH_DB}"
LOCK_KEY = "bench:lock"  # who is using db 14; flushed away at the end of the run
LOCK_SECONDS = 600


def add_redis_options(parser: argparse.ArgumentParser) -> None:
    """``--redis-url`` (database 14 of a shared Redis, the default) or ``--embedded`` (a private one)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    where.add_argument("--embedded", action="store_true", help="use a private embedded Redis")


def chosen_redis(args: argparse.Namespace) -> str | None:
    """The URL :func:`add_redis_options` parsed, for :func:`bench_redis`: None for a private server."""
    return None if args.embedded else args.redis_url


@contextmanager
def bench_redis(url: str | None) -> Iterator[str]:
    """Yield the Redis URL to use: an embedded server (url None) or db 14 of a shared one.

    Database 14 is claimed with a lock key first (another benchmark run using it
    makes this one stop with a message, instead of both flushing each other's
    keys), flushed with the claim in one transaction, and flushed at the end.
    """
    if url is None:
        with EmbeddedRedis() as server:
            yield server.redis_url
        return
    client = redis.Redis.from_url(client_url_for(url), socket_connect_timeout=3)
    claim_bench_db(client, url)  # before the try: a run that could not claim db 14 must not flush it
    try:
        yield url
    finally:
        client.flushdb()  # also releases the claim
        client.close()


def claim_bench_db(client: redis.Redis, url: str) -> None:
    """Check ``client`` is on db 14, claim it (SystemExit if another run holds it), and flush it."""
    db = int(client.connection_pool.connection_kwargs.get("db", 0))
    if db != BENCH_DB:
        raise SystemExit(f"{url} names database {db}; the benchmarks flush theirs, so only db {BENCH_DB}")
    owner = f"{socket.gethostname()}:{os.getpid()}:{Path(sys.argv[0]).name}"
    if not client.set(LOCK_KEY, owner, nx=True, ex=LOCK_SECONDS):
        raw = client.get(LOCK_KEY)
        holder = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        if holder is None or _stale_claim(holder):
            client.delete(LOCK_KEY)  # its process is gone (killed before it could flush)
            return claim_bench_db(client, url)
        raise SystemExit(
            f"db {BENCH_DB} is in use by another benchmark run ({holder!r}); wait for it to finish "
            f"(the claim expires within {LOCK_SECONDS} s) or use --embedded where offered"
        )
    with client.pipeline(transaction=True) as pipe:
        pipe.flushdb()
        pipe.set(LOCK_KEY, owner, ex=LOCK_SECONDS)
        pipe.execute()


def _stale_claim(holder: str) -> bool:
    """True if ``holder`` ("host:pid:script") names a process of this host that no longer runs."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
