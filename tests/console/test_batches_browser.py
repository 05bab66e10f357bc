"""The batches, batch and dead-letters pages in headless Chromium: progress bars, steps, a retry by button."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from ace_workers.console.notices import NOTICES
from ace_workers.distributed.service import Service
from tests.support.cdp import headless_chromium
from tests.support.console import SCREENSHOTS, RunningConsole
from tests.support.recipes import CHOOSY_HEALED, choosy_traces


@pytest.mark.slow
@pytest.mark.browser
def test_the_batches_page_and_a_batch_page_show_progress_and_steps(
    console: RunningConsole, fleet: Service, tmp_path: Path
) -> None:
    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/batches")
        assert page.count("#recent-batches tr[data-batch]") == 1
        assert page.evaluate("document.querySelector('#recent-batches progress').value") == 8
        assert page.count("#tokens-per-sample circle.point") == 3  # total, prompt, completion of one batch
        page.screenshot(SCREENSHOTS / "batches.png")

        page.click("#recent-batches tr[data-batch] a")
        assert page.url().startswith(f"{console.url}/batches/")
        _, routes = fleet.runtime.pipeline("trace_analyser", "support")
        assert page.count("#steps tr[data-step] progress") == len(routes)
        assert page.evaluate("[...document.querySelectorAll('#steps progress')].every(p => p.value === 8)")
        assert page.text('#batch-counts [data-count="done"] .big') == "8"
        page.screenshot(SCREENSHOTS / "batch.png")


@pytest.mark.slow
@pytest.mark.browser
def test_a_dead_letter_retried_by_its_button_is_gone_with_a_notice(
    console: RunningConsole, fleet: Service, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    handle = fleet.producer.enqueue_traces(choosy_traces(redis_url, 2, {2}), "alpha", recipe="choosy")
    assert handle.wait(timeout=60).failed == 1
    redis_client.set(CHOOSY_HEALED, 1)

    with headless_chromium(tmp_path / "profile", headers=console.basic_auth_header()) as page:
        page.goto(f"{console.url}/dead-letters?batch={handle.batch_id}")
        assert page.count("#letters tr[data-letter]") == 1
        assert "fails on purpose" in page.text("#letters")
        page.screenshot(SCREENSHOTS / "dead-letters.png")

        page.click("#retry-letters")

        assert page.text("#notice") == NOTICES["letters-sent"]
        assert page.count("#letters tr[data-letter]") == 0
        assert page.url().startswith(f"{console.url}/dead-letters?batch={handle.batch_id}")
    assert handle.wait(timeout=60).done == 2  # the retried sample went through
