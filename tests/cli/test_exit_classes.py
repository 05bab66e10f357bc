"""The README's exit-code scheme, held against the console script in a subprocess: a key of another
tenant is refused by policy (4), a worker configuration the worker refuses is a settings error (2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import redis

from ace_workers.distributed.store import RedisSkillbookStore
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from tests.support.operations import add, batch
from tests.support.schema0 import stamp_current_schema

PREFIX = "cliexits"


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``ace-workers ARGS`` as its console script runs, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-c", "from ace_workers.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.fixture
def cli_env(redis_client: redis.Redis, redis_url: str) -> dict[str, str]:
    """The environment of a command on the test Redis under PREFIX (no ACE_* of the shell)."""
    stamp_current_schema(redis_client, PREFIX)
    env = {name: value for name, value in os.environ.items() if not name.startswith("ACE_")}
    env.update({"ACE_REDIS_URL": redis_url, "ACE_QUEUE_PREFIX": PREFIX})
    return env


def test_a_key_of_another_tenant_exits_4_refused_by_policy(
    cli_env: dict[str, str], redis_client: redis.Redis
) -> None:
    registry = TenantRegistry(redis_client, prefix=PREFIX)
    registry.add(Tenant("alpha", skillbooks=("alpha-book",)))
    registry.add(Tenant("beta"))
    RedisSkillbookStore(redis_client, "alpha-book", prefix=PREFIX).apply(batch(add("Check units.", "math")))
    _, beta_secret = ApiKeys(redis_client, prefix=PREFIX).create("beta", "admin")
    done = run_cli(cli_env, "skillbook", "label", "list", "alpha-book", "--api-key", beta_secret)
    assert done.returncode == 4, done.stderr
    assert "skillbook 'alpha-book': tenant 'alpha' owns it" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_refused_worker_configuration_exits_2_as_a_settings_error(cli_env: dict[str, str]) -> None:
    done = run_cli(cli_env, "worker", "--queues", "learn,write", "--concurrency", "4")
    assert done.returncode == 2, done.stderr
    assert "refusing to serve the write queue" in done.stderr
    assert "Traceback" not in done.stderr
