"""What every page shows the same way: humane times with the exact time on hover, the tenants
hint in whole sentences, charts the width of their card, no column that no row fills, and
Flower linked from the fleet page when its address is set. Rendered HTML over real HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from ace_workers.console import app as console_app
from ace_workers.console.times import humane_time, relative_time
from ace_workers.distributed.service import Service
from ace_workers.distributed.store import RedisSkillbookStore
from tests.support.console import RunningConsole, running_console
from tests.support.operations import add, batch
from tests.support.workers import build_test_service

BOOK = "polish"
NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC).timestamp()
# An ISO time as the store writes it: microseconds and a zone, which no page may show raw.
RAW_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+")


def test_a_time_reads_as_how_long_ago_with_the_exact_time_on_hover() -> None:
    shown = humane_time("2026-11-28T11:54:30.123456+00:00", now=NOW)
    assert shown == ('<time datetime="2026-11-28T11:54:30Z" title="2026-11-28 11:54:30 UTC">5 min ago</time>')


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (NOW - 3, "just now"),
        (NOW - 42, "42 s ago"),
        ("2026-11-28T09:00:00", "3 h ago"),  # naive: UTC
        ("2026-11-27T12:00:00Z", "1 day ago"),
        (NOW + 7200, "in 2 h"),
        ("2026-01-02T00:00:00+00:00", "2026-01-02"),
    ],
)
def test_relative_times_in_words(value: object, text: str) -> None:
    assert f">{text}</time>" in humane_time(value, now=NOW)


def test_no_time_shows_the_empty_text_and_what_is_not_a_time_stays_as_it_is() -> None:
    assert humane_time(None, "never") == '<span class="dim">never</span>'
    assert humane_time("<b>soon</b>") == "&lt;b&gt;soon&lt;/b&gt;"


def test_relative_time_counts_whole_minutes() -> None:
    assert relative_time(datetime.fromtimestamp(NOW, UTC) - timedelta(seconds=119), NOW) == "1 min ago"


@pytest.fixture
def service(redis_client: redis.Redis, redis_url: str) -> Iterator[Service]:
    """No workers; Flower's address set."""
    built = build_test_service(redis_url, flower_url="https://flower.example.test/")
    try:
        yield built
    finally:
        built.close()


@pytest.fixture
def learned(service: Service) -> dict[str, str]:
    """Skillbook BOOK: a skill an ``ace`` sample taught (no trace id) and one a trace taught
    (trace id t-42); their ids by name."""
    store = RedisSkillbookStore(service.runtime.redis, BOOK, prefix=service.runtime.settings.queue_prefix)
    ids = {}
    for name, source in [
        ("ace", {"batch_id": "b1", "sample_index": 0, "recipe": "ace"}),
        ("traced", {"batch_id": "b2", "sample_index": 0, "trace_id": "t-42"}),
    ]:
        operation = add(f"Skill of the {name} sample.", "math", insight_source=source)
        (ids[name],) = store.apply(batch(operation)).report.added
    return ids


@pytest.fixture
def console(service: Service, learned: dict[str, str]) -> Iterator[RunningConsole]:
    with running_console(service) as running:
        yield running


def _skill_page(console: RunningConsole, skill_id: str) -> str:
    with console.client() as client:
        page = client.get(f"/skillbooks/{BOOK}/skills/{skill_id}")
    assert page.status_code == 200, page.text
    return page.text


def test_every_time_on_the_skill_pages_is_humane(console: RunningConsole, learned: dict[str, str]) -> None:
    page = _skill_page(console, learned["ace"])
    assert RAW_TIME.search(page) is None
    assert page.count('<time datetime="') >= 3  # created, updated, the occurrence, the change
    assert re.search(r'<time datetime="[^"]+Z" title="[^"]+ UTC">(just now|\d+ s ago)</time>', page)


@pytest.mark.parametrize("path", ["/skillbooks", f"/skillbooks/{BOOK}/history", "/audit"])
def test_pages_listing_times_show_them_humane(console: RunningConsole, path: str) -> None:
    with console.client() as client:
        page = client.get(path)
    assert page.status_code == 200, page.text
    assert RAW_TIME.search(page.text) is None


def test_the_trace_column_is_left_out_when_no_occurrence_has_a_trace(
    console: RunningConsole, learned: dict[str, str]
) -> None:
    ace_page = _skill_page(console, learned["ace"])
    traced_page = _skill_page(console, learned["traced"])
    assert "<th>Trace</th>" not in ace_page
    assert "<th>Recipe</th>" in ace_page
    assert "<th>Trace</th>" in traced_page and "t-42" in traced_page
    assert "<th>Recipe</th>" not in traced_page


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def test_the_tenants_hint_is_whole_sentences(console: RunningConsole) -> None:
    with console.client() as client:
        page = client.get("/tenants").text
    hint = _text(page[page.index('id="live"') : page.index("</p>", page.index('id="live"'))])
    assert "are fewest. Spend is counted per UTC day" in hint
    assert ";spend" not in hint


def test_admission_off_still_ends_its_sentence_before_the_next(redis_url: str) -> None:
    built = build_test_service(redis_url, admission_window=0)
    try:
        with running_console(built) as running, running.client() as client:
            page = client.get("/tenants").text
    finally:
        built.close()
    assert "weights and caps do not apply. Spend is counted" in _text(page)


def test_the_fleet_page_links_flower_when_its_address_is_set(console: RunningConsole) -> None:
    with console.client() as client:
        page = client.get("/fleet").text
        api = client.get("/api/fleet").json()
    assert api["flower_url"] == "https://flower.example.test/"
    assert '<a href="https://flower.example.test/" id="flower-link">Flower</a>' in page
    assert "Tasks done</th>" in page
    assert "1 partition configured here" in page  # not "1 partition(s)"


def test_without_flower_the_fleet_page_says_how_to_link_it(redis_url: str) -> None:
    built = build_test_service(redis_url)
    try:
        with running_console(built) as running, running.client() as client:
            page = client.get("/fleet").text
    finally:
        built.close()
    assert 'id="flower-link"' not in page
    assert "Set <code>ACE_FLOWER_URL</code>" in page


def test_charts_fill_their_card() -> None:
    css = (Path(console_app.__file__).parent / "static" / "console.css").read_text()
    rules = {
        selector.strip(): body
        for selector, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)
        if "svg" in selector and "chart" in selector
    }
    assert rules[".chart svg"].replace(" ", "").count("width:100%") == 1
    assert not any("max-width" in body for body in rules.values()), rules
