"""docs/intake.md's examples run as printed against a real intake: the producer holds only
``INTAKE_URL`` and ``ACE_API_KEY``, and its batch lands in its tenant's skillbook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ace_workers.distributed.service import Service
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from tests.support.docs import run_example, run_shell_example, runnable_blocks
from tests.support.intake import running_intake
from tests.support.workers import build_test_service

(PYTHON_EXAMPLE,) = runnable_blocks("docs/intake.md", "## Sending traces")
(SHELL_EXAMPLE,) = runnable_blocks("docs/intake.md", "## Sending traces", language="sh")
BOOK = "acme-support"


@pytest.fixture
def acme(redis_client: redis.Redis, redis_url: str) -> Iterator[tuple[Service, dict[str, str]]]:
    """A fleet with tenant acme (``acme-*``), its learn key, and intake: the page's reader's settings."""
    service = build_test_service(redis_url)
    try:
        prefix = service.runtime.settings.queue_prefix
        TenantRegistry(service.runtime.redis, prefix=prefix).add(Tenant("acme", prefixes=("acme-",)))
        _, secret = ApiKeys(service.runtime.redis, prefix=prefix).create("acme", "learn")
        with running_intake(service) as url:
            yield service, {"INTAKE_URL": url, "ACE_API_KEY": secret}
    finally:
        service.close()


def test_the_python_example_sends_a_batch_with_only_the_url_and_the_key(
    acme: tuple[Service, dict[str, str]], tmp_path: Path
) -> None:
    service, settings = acme
    done = run_example(PYTHON_EXAMPLE, tmp_path, **settings)
    assert done.returncode == 0, done.stderr
    batch_id, total = done.stdout.split()
    assert total == "1"
    assert service.runtime.batches.status(batch_id).skillbook == BOOK


def test_the_shell_example_enqueues_through_intake(
    acme: tuple[Service, dict[str, str]], tmp_path: Path
) -> None:
    service, settings = acme
    done = run_shell_example(SHELL_EXAMPLE, tmp_path, **settings)
    assert done.returncode == 0, done.stderr
    status = service.runtime.batches.status(done.stdout.strip())
    assert (status.skillbook, status.total) == (BOOK, 1)
