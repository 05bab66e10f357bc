"""A provider 429 storm: 2 processes x 8 threads through the shared limiter overrun the provider rarely."""

from __future__ import annotations

import uuid

import pytest

from tests.support.fake_provider import FakeProvider, run_storm

CAPACITY = 25  # requests a second the provider takes
# The limit configured for the fleet: 80% of the capacity, as an operator would set it.
RPM = CAPACITY * 60 * 0.8
PROCESSES, THREADS, CALLS = 2, 8, 8


@pytest.mark.timeout(400)  # two processes import litellm (seconds each on a busy machine)
def test_the_shared_limiter_keeps_a_storm_under_five_percent_rejected(redis_url: str) -> None:
    with FakeProvider(CAPACITY) as provider:
        phases = run_storm(
            provider,
            redis_url=redis_url,
            prefix=f"s{uuid.uuid4().hex[:6]}",
            rpm=RPM,
            processes=PROCESSES,
            threads=THREADS,
            calls=CALLS,
        )
    limited, unlimited = phases["limited"], phases["unlimited"]
    figures = f"with the limiter: {limited}, {limited.rejected_share:.1%} rejected; without: {unlimited}"
    assert (limited.succeeded, limited.failed) == (PROCESSES * THREADS * CALLS, 0), figures
    assert limited.rejected_share < 0.05, figures
    # Without the limiter the same storm overruns the provider: the figure above means something.
    assert unlimited.rejected_share > 0.2, figures
