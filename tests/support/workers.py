"""In-process worker fleets for the distributed tests, and the settings prefix they read."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ace_workers.distributed.service import Service, build_service, local_workers
from ace_workers.distributed.settings import WorkerSettings
from tests.support.recipes import TEST_RECIPES

# Every setting of ace-workers is read from a variable with this prefix.
ENV_PREFIX = "ACE_"


def build_test_service(redis_url: str, **settings: Any) -> Service:
    """A service on the test Redis with a queue prefix of its own and the test recipes (no workers)."""
    options = {
        "queue_prefix": f"t{uuid.uuid4().hex[:8]}",
        "sim_trust_threshold": 0,
        "recipes": TEST_RECIPES,
        **settings,
    }
    return build_service(WorkerSettings(redis_url=redis_url, **options), redis_url=redis_url)


@contextmanager
def running_service(redis_url: str, *, learn_threads: int = 4, **settings: Any) -> Iterator[Service]:
    """In-process workers for the three queues on the test Redis, with a queue prefix of their own."""
    built = build_test_service(redis_url, **settings)
    try:
        with local_workers(built, learn_threads=learn_threads):
            yield built
    finally:
        built.close()


@contextmanager
def learn_and_write_workers(redis_url: str) -> Iterator[Service]:
    """Real in-process workers on ``redis_url`` serving the learn and write queues only (no execute),
    with the settings of the environment, as the CLI's commands read them."""
    service = build_service(WorkerSettings.from_env(), redis_url=redis_url)
    try:
        with local_workers(service, learn_threads=2, serve_execute=False):
            yield service
    finally:
        service.close()
