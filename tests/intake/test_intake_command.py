"""``ace-workers intake`` as its console script runs: a process of its own on a port, answering a
producer's POST with the batch, and refusing to start without a shared Redis."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import redis

from ace_workers.distributed.store.batches import BatchStore
from ace_workers.distributed.tenancy import ApiKeys
from tests.support.cli import run_cli_process
from tests.support.console import console_process
from tests.support.processes import CLI
from tests.support.schema0 import stamp_current_schema

PREFIX = "cliintake"


def test_the_intake_command_serves_a_producer_with_a_key(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    stamp_current_schema(redis_client, PREFIX)
    _, secret = ApiKeys(redis_client, prefix=PREFIX).create("*", "learn")
    env = {name: value for name, value in os.environ.items() if not name.startswith("ACE_")}
    env.update({"ACE_REDIS_URL": redis_url, "ACE_QUEUE_PREFIX": PREFIX})
    # console_process serves any command that answers /healthz on --port.
    with console_process([sys.executable, "-c", CLI, "intake"], env, tmp_path / "intake.log") as url:
        answer = httpx.post(
            f"{url}/v1/traces",
            params={"skillbook": "book"},
            content='{"question": "2+2?", "answer": "5", "feedback": "Incorrect."}\n',
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        )
    assert answer.status_code == 202, answer.text
    batch_id = answer.json()["batch_id"]
    assert answer.json()["status_url"] == f"{url}/v1/batches/{batch_id}"
    assert BatchStore(redis_client, prefix=PREFIX, ttl_seconds=60).status(batch_id).total == 1


def test_the_intake_command_needs_a_shared_redis(clean_env: object) -> None:
    ran = run_cli_process("intake")
    assert ran.code == 2
    assert "intake" in ran.err and "ACE_REDIS_URL" in ran.err
