"""Intake for the tests: served by uvicorn in a thread on a free port, with API keys of two tenants.

Tenant ``alpha`` owns the skillbooks named ``alpha-*`` and tenant ``beta`` those named ``beta-*``;
:class:`IntakeKeys` holds a learn and a read key of alpha and a learn key of beta.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ace_workers.distributed.service import Service
from ace_workers.distributed.tenancy import ApiKeys, Tenant, TenantRegistry
from ace_workers.intake import build_intake_app
from tests.support.servers import serving_app
from tests.support.workers import build_test_service

ALPHA_BOOK, BETA_BOOK = "alpha-notes", "beta-notes"


@dataclass(frozen=True)
class IntakeKeys:
    """Secrets of the tests' API keys: alpha's learn and read keys, beta's learn key."""

    alpha_learn: str
    alpha_read: str
    beta_learn: str


def make_tenants_and_keys(service: Service) -> IntakeKeys:
    """Tenants alpha (``alpha-*``) and beta (``beta-*``) in ``service``'s Redis, and their keys."""
    runtime = service.runtime
    prefix = runtime.settings.queue_prefix
    registry = TenantRegistry(runtime.redis, prefix=prefix)
    registry.add(Tenant("alpha", prefixes=("alpha-",)))
    registry.add(Tenant("beta", prefixes=("beta-",)))
    runtime.tenants.forget()
    keys = ApiKeys(runtime.redis, prefix=prefix)
    return IntakeKeys(
        alpha_learn=keys.create("alpha", "learn")[1],
        alpha_read=keys.create("alpha", "read")[1],
        beta_learn=keys.create("beta", "learn")[1],
    )


@contextmanager
def running_intake(service: Service) -> Iterator[str]:
    """Intake of ``service``'s fleet on a free loopback port, as ``ace-workers intake`` serves it; its URL."""
    with serving_app(build_intake_app(service, host="127.0.0.1")) as url:
        yield url


@contextmanager
def intake_without_workers(redis_url: str, **settings: Any) -> Iterator[tuple[Service, IntakeKeys, str]]:
    """A fleet with no worker (``settings`` on top of the test ones), its tenants' keys, and its
    intake's URL, served for real."""
    service = build_test_service(redis_url, **settings)
    try:
        keys = make_tenants_and_keys(service)
        with running_intake(service) as url:
            yield service, keys, url
    finally:
        service.close()
