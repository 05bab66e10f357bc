"""The skillbooks area in headless Chromium: from the index to a skillbook, a search, a skill, and a pin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace_workers.console.notices import NOTICES
from ace_workers.distributed.service import Service
from tests.support.cdp import Page, headless_chromium
from tests.support.console import SCREENSHOTS, RunningConsole, docs_screenshot


def _listed_ids(page: Page) -> list[str]:
    ids = page.evaluate(
        "JSON.stringify([...document.querySelectorAll('#skills tr[data-skill]')].map(r => r.dataset.skill))"
    )
    return list(json.loads(ids))


@pytest.mark.slow
@pytest.mark.browser
def test_from_the_index_a_skillbook_shows_its_skills_and_a_search_filters_them(
    console: RunningConsole, fleet: Service, tmp_path: Path
) -> None:
    _, view = fleet.runtime.store("support").cached_snapshot()
    skills = view.skills()
    word = skills[0].section.upper()  # the search ignores case
    expected = [s.id for s in skills if word.lower() in f"{s.id}\n{s.content}".lower()]
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/skillbooks")
        page.screenshot(SCREENSHOTS / "skillbooks-index.png")
        page.click('tr[data-skillbook="support"] a')
        assert page.url() == f"{console.url}/skillbooks/support"
        assert _listed_ids(page) == [s.id for s in skills]
        assert page.text("#version") == str(fleet.runtime.store("support").version())
        assert page.count('a[href="/skillbooks/support/history"]') == 1
        page.screenshot(SCREENSHOTS / "skillbooks-detail.png")
        page.screenshot(docs_screenshot("console-skillbook.png"))
        page.fill("#search-q", word)
        page.click("#search-submit")
        assert f"q={word}" in page.url()
        assert _listed_ids(page) == expected
        assert f"{len(expected)} active skill" in page.text("#match-count")
    assert 0 < len(expected) < len(skills)


@pytest.mark.slow
@pytest.mark.browser
def test_a_skill_page_shows_its_provenance_and_its_pin_button_pins_it_as_the_user(
    console: RunningConsole, fleet: Service, tmp_path: Path
) -> None:
    store = fleet.runtime.store("support")
    skill = store.export().skills()[0]
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/skillbooks/support")
        page.click(f'#skills tr[data-skill="{skill.id}"] a')
        assert page.text("#skill-id") == skill.id
        assert page.text("#skill-content") == skill.content
        assert page.count("#pinned-mark") == 0
        batch_links = page.count('#occurrences td.batch a[href^="/batches/"]')
        page.fill("#action-note", "keep: the agent relies on it")
        page.click("#action-pin")
        assert page.count("#pinned-mark") == 1
        assert page.text("#notice") == NOTICES["skill-pin"]
        assert console.ops.name in page.text("#changes")
        page.screenshot(SCREENSHOTS / "skillbooks-skill.png")
    assert batch_links > 0
    pinned = store.export().get_skill(skill.id)
    assert pinned is not None and pinned.pinned
    change = store.history(1)[0]
    assert (change.source or {})["actor"] == console.ops.name
    assert (change.source or {})["note"] == "keep: the agent relies on it"
