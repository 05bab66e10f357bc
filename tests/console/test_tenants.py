"""The tenants area: every tenant with what it owns, its share of the fleet and its spend against
its budgets (the limiter's own counts, as ``tenant usage --json``); a tenant's key sees its own
tenant only. Real HTTP, real Redis; spend goes through the real limiter (reserve, then settle)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ace_workers.distributed.service import Service
from ace_workers.distributed.store.keys import deferring_tenants_key
from ace_workers.distributed.tenancy import ApiKeys, Budget, Tenant, TenantRegistry
from ace_workers.distributed.tenancy.deferred_samples import DeferredSamples
from ace_workers.distributed.tenancy.errors import BudgetExhaustedError
from ace_workers.distributed.tenancy.limiter import Reservation
from ace_workers.distributed.tenancy.usage import usage_report
from tests.support.cdp import headless_chromium
from tests.support.console import (
    SCREENSHOTS,
    RunningConsole,
    docs_screenshot,
    running_console,
)
from tests.support.operations import add, batch

MODEL = "openai/gpt-4o-mini"
ALPHA_BOOK, BETA_BOOK, DEFAULT_BOOK = "alpha-docs", "beta-notes", "misc"
ALPHA_BATCH = "batch-alpha-1"


def spend(service: Service, tenant: Tenant, tokens: int, cost: float) -> None:
    """One LLM call of ``tenant`` counted by the fleet's limiter: reserved, then settled at its real usage."""
    reservation = service.runtime.limiter.reserve(tenant, MODEL, 100, 0.01)
    assert isinstance(reservation, Reservation), reservation
    assert service.runtime.limiter.settle(reservation, tokens, cost)


@pytest.fixture
def fleet_of_tenants(idle_service: Service) -> Service:
    """alpha (prefix alpha-, weight 3, cap 5, 1000 tokens a day on MODEL) with a running batch and 3
    samples in flight; beta (beta-notes by name, 1 USD a day on all models, spent past it) with a
    sample waiting for budget; ``misc`` left to ``default``; and a removed tenant still deferring."""
    runtime = idle_service.runtime
    prefix = runtime.settings.queue_prefix
    registry = TenantRegistry(runtime.redis, prefix=prefix)
    alpha = registry.add(
        Tenant(
            "alpha",
            prefixes=("alpha-",),
            weight=3,
            max_in_flight=5,
            budgets=(Budget(MODEL, tokens_per_day=1000),),
        )
    )
    beta = registry.add(Tenant("beta", skillbooks=(BETA_BOOK,), budgets=(Budget(cost_per_day=1.0),)))
    runtime.tenants.forget()
    for name in (ALPHA_BOOK, BETA_BOOK, DEFAULT_BOOK):
        runtime.store(name).apply(batch(add(f"A skill of {name}.", "general")))
    spend(idle_service, alpha, 600, 0.02)
    spend(idle_service, beta, 5000, 1.25)  # the estimate had room; the real cost ran past the budget
    runtime.batches.create(
        ALPHA_BATCH,
        skillbook=ALPHA_BOOK,
        recipe="trace_analyser",
        per_epoch=8,
        epochs=1,
        skills_at_start=1,
        tenant="alpha",
    )
    runtime.admission.open(ALPHA_BATCH, tenant="alpha", limit=3, per_epoch=8)
    assert [grant.admitted for grant in runtime.admission.admit(64, registry.all())] == [3]
    deferrals = DeferredSamples(runtime.redis, prefix=prefix)
    refused = BudgetExhaustedError(
        "beta", "*", "cost_per_day", spent=1.25, budget=1.0, resets_at=time.time() + 3600
    )
    kwargs = {
        "recipe": "r",
        "skillbook": BETA_BOOK,
        "index": 2,
        "batch_id": "b-beta",
        "epoch": 1,
        "sample_index": 1,
    }
    assert deferrals.park(refused, task_id=None, step="UpdateStep", kwargs=kwargs, payload={})
    gone = BudgetExhaustedError("gamma", "*", "cost_per_day", spent=1, budget=1, resets_at=time.time() + 3600)
    assert deferrals.park(gone, task_id=None, step="UpdateStep", kwargs=kwargs, payload={})
    # Redis is untrusted: a name no tenant can have, in the set of deferring tenants, is left out.
    runtime.redis.sadd(deferring_tenants_key(prefix), "NOT A TENANT")
    return idle_service


@pytest.fixture
def console(fleet_of_tenants: Service) -> Iterator[RunningConsole]:
    with running_console(fleet_of_tenants) as running:
        yield running


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {tenant["name"]: tenant for tenant in answer["tenants"]}


def usage_row(tenant: dict[str, Any], model: str, window: str) -> dict[str, Any]:
    (row,) = [row for row in tenant["usage"] if row["model"] == model and row["window"] == window]
    return row


def test_the_api_lists_every_tenant_with_what_it_owns_and_its_share_of_the_fleet(
    console: RunningConsole,
) -> None:
    with console.client() as client:
        response = client.get("/api/tenants")
    assert response.status_code == 200
    tenants = by_name(response.json())
    assert list(tenants) == ["alpha", "beta", "default", "gamma"]
    assert tenants["alpha"]["owned_skillbooks"] == [ALPHA_BOOK]
    assert tenants["alpha"]["prefixes"] == ["alpha-"]
    assert tenants["beta"]["owned_skillbooks"] == [BETA_BOOK]
    assert tenants["beta"]["skillbooks"] == [BETA_BOOK]
    assert tenants["default"]["owned_skillbooks"] == [DEFAULT_BOOK]
    assert (tenants["alpha"]["weight"], tenants["alpha"]["max_in_flight"]) == (3, 5)
    assert tenants["alpha"]["in_flight"] == 3
    assert tenants["beta"]["in_flight"] == 0
    assert tenants["beta"]["waiting_for_budget"] == 1
    assert (tenants["gamma"]["stored"], tenants["gamma"]["waiting_for_budget"]) == (False, 1)
    assert tenants["default"]["stored"] is False  # default exists without being added


def test_the_api_sets_the_limiters_spend_against_each_budget(
    console: RunningConsole, fleet_of_tenants: Service
) -> None:
    with console.client() as client:
        tenants = by_name(client.get("/api/tenants").json())
    alpha_day = usage_row(tenants["alpha"], MODEL, "day")
    assert (alpha_day["tokens"], alpha_day["token_budget"], alpha_day["token_share"]) == (600, 1000, 0.6)
    assert alpha_day["requests"] == 1
    beta_day = usage_row(tenants["beta"], "*", "day")
    assert (beta_day["cost"], beta_day["cost_budget"], beta_day["cost_share"]) == (1.25, 1.0, 1.25)
    assert tenants["default"]["usage"] == []  # no budget, nothing spent
    # The same document `tenant usage --json` prints, tenant by tenant.
    runtime = fleet_of_tenants.runtime
    prefix = runtime.settings.queue_prefix
    report = usage_report(
        TenantRegistry(runtime.redis, prefix=prefix).map(),
        DeferredSamples(runtime.redis, prefix=prefix),
        runtime.limiter,
        ["alpha", "beta"],
    ).to_dict()
    for expected in report["tenants"]:
        assert tenants[expected["tenant"]]["usage"] == expected["usage"]


def test_the_pages_render_each_tenant_with_its_bars_and_skillbook_links(console: RunningConsole) -> None:
    with console.client() as client:
        index = client.get("/tenants")
        alpha = client.get("/tenants/alpha")
    assert index.status_code == 200
    for name in ("alpha", "beta", "default", "gamma"):
        assert f'data-tenant="{name}"' in index.text
    assert 'href="/tenants"' in index.text and 'class="active">Tenants' in index.text
    assert 'data-share="0.6000"' in index.text  # alpha's tokens today
    assert 'class="share-bar share-spent"' in index.text  # beta's cost today, past its budget
    assert "NOT A TENANT" not in index.text
    assert "<script>" not in index.text.split("</head>", 1)[1]  # no inline script; the CSP stays
    assert alpha.status_code == 200
    assert f'href="/skillbooks/{ALPHA_BOOK}"' in alpha.text
    assert f'href="/batches/{ALPHA_BATCH}"' in alpha.text
    assert BETA_BOOK not in alpha.text


def test_one_tenants_page_lists_its_running_batches(console: RunningConsole) -> None:
    with console.client(token=console.token) as client:
        alpha = client.get("/api/tenants/alpha").json()
        beta = client.get("/api/tenants/beta").json()
        missing = client.get("/api/tenants/nobody")
        bad = client.get("/api/tenants/NOT%20A%20TENANT")
    assert [row["batch_id"] for row in alpha["batches"]] == [ALPHA_BATCH]
    assert alpha["batches"][0]["skillbook"] == ALPHA_BOOK
    assert alpha["owned_skillbooks"] == [ALPHA_BOOK]
    assert usage_row(alpha, MODEL, "day")["token_share"] == 0.6
    assert beta["batches"] == []
    assert missing.status_code == 404
    assert missing.json()["message"] == "no tenant 'nobody' in this fleet"
    assert bad.status_code == 400


def test_a_tenants_key_sees_only_its_own_tenant(console: RunningConsole, fleet_of_tenants: Service) -> None:
    runtime = fleet_of_tenants.runtime
    _, secret = ApiKeys(runtime.redis, prefix=runtime.settings.queue_prefix).create("beta", "read")
    with console.client(token=secret) as client:
        listed = client.get("/api/tenants")
        own = client.get("/api/tenants/beta")
        foreign = client.get("/api/tenants/alpha")
        default = client.get("/api/tenants/default")
        page = client.get("/tenants")
        foreign_page = client.get("/tenants/alpha")
    assert [tenant["name"] for tenant in listed.json()["tenants"]] == ["beta"]
    assert own.status_code == 200
    assert own.json()["waiting_for_budget"] == 1
    assert foreign.status_code == 404
    assert default.status_code == 404
    # As if alpha did not exist: the same answer as a tenant never added.
    assert foreign.json()["message"] == "no tenant 'alpha' in this fleet"
    assert page.status_code == 200
    assert 'data-tenant="beta"' in page.text
    assert 'data-tenant="alpha"' not in page.text
    assert ALPHA_BOOK not in page.text
    assert foreign_page.status_code == 404


@pytest.mark.slow
@pytest.mark.browser
def test_the_tenants_page_in_chromium_draws_each_share_as_a_bar(
    console: RunningConsole, tmp_path: Path
) -> None:
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/tenants")
        assert page.count("#tenants tr[data-tenant]") == 4
        # The filled part of alpha's token bar, as the browser laid it out: 60% of the frame.
        filled = page.evaluate(
            "(() => { const rects = document.querySelectorAll("
            "'#usage-alpha svg.share-bar rect'); return rects[1].getBoundingClientRect().width"
            " / rects[0].getBoundingClientRect().width; })()"
        )
        assert round(filled, 2) == 0.6
        page.screenshot(SCREENSHOTS / "tenants.png")
        page.screenshot(docs_screenshot("console-tenants.png"))
        page.click('#tenants tr[data-tenant="alpha"] a')
        assert page.url() == f"{console.url}/tenants/alpha"
        assert page.count(f'#running-batches tr[data-batch="{ALPHA_BATCH}"]') == 1
