"""The history area in headless Chromium: the timeline, a version's diff, a label move and a rollback,
each through its page and its confirmation form, photographed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ace_workers.console.notices import NOTICES
from ace_workers.distributed.service import Service
from tests.support.cdp import BrowserError, Page, headless_chromium
from tests.support.console import SCREENSHOTS, RunningConsole
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def arrive(page: Page, check: Callable[[], bool], what: str) -> None:
    """Wait until ``check`` holds on the page a form submission leads to (mid-navigation reads fail)."""

    def holds() -> bool:
        try:
            return page.evaluate("document.readyState") == "complete" and check()
        except BrowserError:
            return False

    wait_for(holds, 20, what, every=0.05)


def test_a_versions_diff_opens_from_the_timeline_and_shows_its_skills(
    console: RunningConsole, fleet: Service, tmp_path: Path
) -> None:
    store = fleet.runtime.store("support")
    with console.client() as client:
        entries = client.get("/api/skillbooks/support/history").json()["entries"]
    adding = next(entry for entry in entries if entry["effect"]["added"])
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/skillbooks/support/history")
        assert page.count("#timeline tr[data-version]") == len(entries)
        assert f"v{store.version()}" in page.text("#timeline tbody tr")
        page.screenshot(SCREENSHOTS / "history-timeline.png")

        page.click(f'#timeline tr[data-version="{adding["version"]}"] a.version-diff')
        arrive(page, lambda: "/diff" in page.url(), "the diff page")
        shown = page.evaluate(
            "[...document.querySelectorAll('#diff tr[data-skill]')].map(r => r.dataset.skill)"
        )
        assert set(adding["effect"]["added"]) <= set(shown)
        assert f"version {adding['version'] - 1} → {adding['version']}" in page.text("h1")
        page.screenshot(SCREENSHOTS / "history-diff.png")


def test_a_label_moves_through_its_confirmation_page(
    console: RunningConsole, fleet: Service, tmp_path: Path
) -> None:
    store = fleet.runtime.store("support")
    store.labels.set("prod", 1, actor="user:setup")
    head = store.version()
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/skillbooks/support/labels")
        page.click('#labels tr[data-label="prod"] button.move-label')  # to the head, the field's default
        arrive(page, lambda: "/labels/prod/move" in page.url(), "the move confirmation")
        assert f"move label prod from version 1 to {head}" in page.text("h1")
        assert page.count("#diff tr[data-skill]") > 0  # the skills its readers will see change
        page.screenshot(SCREENSHOTS / "history-label-move-confirm.png")

        page.fill('#label-move-form input[name="note"]', "evaluated well")
        page.click("#confirm-label-move")
        arrive(
            page, lambda: page.count(f'#labels tr[data-label="prod"][data-version="{head}"]') == 1, "the move"
        )
        assert console.ops.name in page.text("#label-log tbody tr")
        assert "evaluated well" in page.text("#label-log tbody tr")
        page.screenshot(SCREENSHOTS / "history-labels.png")
    assert store.labels.get("prod") == head


def test_a_rollback_through_its_confirmation_page_appears_in_the_timeline(
    console: RunningConsole, fleet: Service, tmp_path: Path
) -> None:
    store = fleet.runtime.store("support")
    head = store.version()
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/skillbooks/support/history")
        page.click('#timeline tr[data-version="1"] a.rollback-link')
        arrive(page, lambda: "/rollback" in page.url(), "the rollback confirmation")
        assert "roll back to version 1" in page.text("h1")
        assert page.count("#diff tr[data-skill]") > 0
        page.screenshot(SCREENSHOTS / "history-rollback-confirm.png")

        page.fill('#rollback-form input[name="note"]', "back to the start")
        page.click("#confirm-rollback")
        arrive(
            page, lambda: "/history" in page.url() and page.count("#timeline tr[data-version]") > 0, "history"
        )
        newest = page.text("#timeline tbody tr")
        assert f"v{head + 1}" in newest
        assert "rollback" in newest
        assert console.ops.name in newest
        assert page.text("#notice") == NOTICES["rolled-back"]
    assert store.version() == head + 1
    assert store.diff(1, head + 1) == {}
