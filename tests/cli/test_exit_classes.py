"""The README's exit-code scheme, held against the console script in a subprocess: a key of another
tenant and a tenant removal that would fail its waiting samples are refused by policy (4), a
worker configuration the worker refuses is a settings error (2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import redis

from ace_workers.distributed.store import RedisSkillbookStore
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from ace_workers.distributed.tenancy.deferred_samples import DeferredSamples
from ace_workers.distributed.tenancy.errors import BudgetExhaustedError
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


def test_removing_a_tenant_whose_samples_wait_for_budget_is_refused_with_4_and_removes_nothing(
    cli_env: dict[str, str], redis_client: redis.Redis
) -> None:
    registry = TenantRegistry(redis_client, prefix=PREFIX)
    registry.add(Tenant("acme", prefixes=("acme-",)))
    spent = BudgetExhaustedError("acme", "gpt-4o", "tokens_per_day", spent=10, budget=10, resets_at=0)
    kwargs = {"batch_id": "b1", "epoch": 1, "sample_index": 1, "index": 2, "skillbook": "acme-book"}
    DeferredSamples(redis_client, prefix=PREFIX).park(
        spent, task_id=None, step="UpdateStep", kwargs=kwargs, payload={}
    )
    done = run_cli(cli_env, "tenant", "remove", "acme")
    assert done.returncode == 4, done.stderr
    assert "tenant 'acme' has 1 sample waiting for budget and 0 running or queued" in done.stderr
    assert "nothing removed" in done.stderr
    assert registry.tenant_of("acme-book") == "acme"
